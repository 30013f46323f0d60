// Command kfakemain runs franz-go's kfake on a loopback port until it is
// killed, printing the listen address: a stand-in broker for poking at clients
// by hand (`go run ./integration/internal/kfakemain`).
//
// TODO(lead): replace with `runnel broker` once it runs.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "listen port on 127.0.0.1 (0: any free port)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation()}
	if *port != 0 {
		opts = append(opts, kfake.Ports(*port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
