package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first Ctrl-C, commands wind down (flush, print a
		// summary); a second one kills the process at once.
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "runnel: %v\n", err)
		var ec *exitCodeError
		if errors.As(err, &ec) {
			return ec.code
		}
		return 1
	}
	return 0
}

// exitCodeError makes run exit with code instead of 1, after printing err
// as any other error.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// newRootCmd builds the whole command tree, reading from stdin and writing
// to stdout and stderr, so tests can run commands in-process.
func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "runnel",
		Short: "Runnel: a Kafka-compatible streaming platform",
		Long: `runnel is the one binary of Runnel. Its client commands (topic, produce,
consume, group, txn, cluster, perf) speak the Kafka protocol and work against any Kafka-compatible
cluster: Runnel, Apache Kafka, Redpanda, ...`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see \"%s --help\")", err, c.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVarP(&g.brokers, "brokers", "b", defaultBrokers(), "bootstrap brokers, host:port[,host:port...] (env RUNNEL_BROKERS)")
	pf.StringVar(&g.clientID, "client-id", "runnel-cli", "client id sent to the brokers")

	// Subcommands are registered here, and only here.
	root.AddCommand(newBrokerCmd(), newTopicCmd(g), newProduceCmd(g), newConsumeCmd(g), newGroupCmd(g), newTxnCmd(g), newClusterCmd(g), newPerfCmd(g), newConnectCmd(), newDemoCmd(g))

	return root
}
