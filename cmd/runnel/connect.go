package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
)

// newConnectCmd is `runnel connect`: run Connect workers, as Kafka's
// connect-standalone and connect-distributed scripts do.
func newConnectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "connect",
		Short: "Run Connect workers that move data between topics and other systems",
		Long: `Run Connect: connectors described in config files (YAML, JSON or Kafka's
.properties) copy data from files, HTTP, PostgreSQL ... into topics and back.
The REST API (Kafka Connect's paths) listens on the worker's listeners
(default http://:8083).`,
	}
	cmd.AddCommand(newConnectStandaloneCmd(), newConnectDistributedCmd())
	return cmd
}

func newConnectDistributedCmd() *cobra.Command {
	var logLevel, logFormat string
	cmd := &cobra.Command{
		Use:   "distributed WORKER-CONFIG",
		Short: "Run a worker of a Connect cluster (workers with the same group.id share the work)",
		Long: `Run a distributed worker: workers with the same group.id form a Connect
cluster over the Kafka protocol and spread connectors and tasks among them;
when a worker joins or dies, its tasks move. Connector configs, offsets and
states live in compacted topics (config.storage.topic, offset.storage.topic,
status.storage.topic), created when missing. Manage connectors over the REST
API of any worker.`,
		Example: `  runnel connect distributed worker.yaml
  curl -X POST -H 'Content-Type: application/json' localhost:8083/connectors \
    -d '{"name": "in", "config": {"connector.class": "FileStreamSource", "file": "in.txt", "topic": "lines"}}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			wcfg, err := connect.LoadWorkerConfig(args[0])
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w, err := connect.StartDistributed(ctx, wcfg, connect.WorkerOptions{Registry: connectors.NewRegistry(), Logger: logger})
			if err != nil {
				return err
			}
			defer w.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "runnel connect distributed: worker of group %s, REST API on %s; Ctrl-C stops\n", wcfg[connect.WorkerGroupID], w.URL())
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
}

func newConnectStandaloneCmd() *cobra.Command {
	var logLevel, logFormat string
	cmd := &cobra.Command{
		Use:   "standalone WORKER-CONFIG [CONNECTOR-CONFIG ...]",
		Short: "Run one worker with the connectors of the files given",
		Long: `Run a standalone worker: one process runs every task of the connectors
given. Source offsets are kept in offset.storage.file.filename (or the
offsets topic when that is not set). Connectors can also be added, changed
and removed over the REST API; those changes are not saved.`,
		Example: `  runnel connect standalone worker.yaml file-source.yaml postgres-sink.properties`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			wcfg, err := connect.LoadWorkerConfig(args[0])
			if err != nil {
				return err
			}
			var conns []connect.Config
			for _, path := range args[1:] {
				c, err := connect.LoadConnectorConfig(path)
				if err != nil {
					return err
				}
				conns = append(conns, c)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w, err := connect.StartStandalone(ctx, wcfg, conns, connect.WorkerOptions{Registry: connectors.NewRegistry(), Logger: logger})
			if err != nil {
				return err
			}
			defer w.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "runnel connect standalone: REST API on %s (%d connectors); Ctrl-C stops\n", w.URL(), len(conns))
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
}
