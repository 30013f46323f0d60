// Command kfakebroker runs franz-go's fake broker, kfake (one broker, data
// in memory, the module version of go.mod), as a process of its own: the
// benchmark's kfake-proc target, measured exactly as `runnel broker` is
// (runnel-proc), so that the client's heap and garbage collector are the
// same for both brokers.
//
// It listens on a loopback port (-port, default 0: a free one), prints
//
//	kfakebroker listening on 127.0.0.1:PORT
//
// on stderr once it accepts connections, and exits 0 on SIGTERM or
// SIGINT after closing the cluster.
//
// Usage:
//
//	go run ./bench/cmd/kfakebroker [-port 9092]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "loopback port to listen on; 0 picks a free one")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kfakebroker listening on %s\n", c.ListenAddrs()[0])
	<-ctx.Done()
	c.Close()
}
