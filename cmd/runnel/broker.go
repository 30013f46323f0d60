package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runnel-io/runnel/broker"
)

// newBrokerCmd is `runnel broker`: start a broker node. Every broker
// setting is a flag named as in Kafka (--num.partitions=3); flags override
// the config file.
func newBrokerCmd() *cobra.Command {
	var configFile, logLevel, logFormat, cpuProfile string
	cmd := &cobra.Command{
		Use:   "broker [--config FILE] [--SETTING=VALUE ...]",
		Short: "Start a broker",
		Long: `Start a Runnel broker: a Kafka-protocol node that stores topics in --log.dirs.

Settings use Kafka's names (num.partitions, log.retention.ms, listeners, ...),
from a YAML or .properties file (--config) and from flags, which win.
The broker stops cleanly on Ctrl-C or SIGTERM.`,
		Example: `  runnel broker --log.dirs ./data
  runnel broker --config broker.yaml --listeners PLAINTEXT://:9093`,
		Args: cobra.NoArgs,
	}
	flagged := map[string]*string{}
	for _, s := range broker.Settings() {
		usage := s.Doc
		if s.Default != "" {
			usage += fmt.Sprintf(" (default %q)", s.Default)
		}
		flagged[s.Name] = cmd.Flags().String(s.Name, "", usage)
	}
	cmd.Flags().StringVar(&configFile, "config", "", "broker config file (YAML, or Kafka .properties)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file (go tool pprof reads it)")
	cmd.Flags().SortFlags = false

	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		settings := map[string]string{}
		if configFile != "" {
			fromFile, err := broker.LoadConfigFile(configFile)
			if err != nil {
				return err
			}
			maps.Copy(settings, fromFile)
		}
		for name, v := range flagged {
			if cmd.Flags().Changed(name) {
				settings[name] = *v
			}
		}
		logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
		if err != nil {
			return err
		}
		if cpuProfile != "" {
			stopProfile, perr := startCPUProfile(cpuProfile)
			if perr != nil {
				return perr
			}
			// err is RunE's result: a failed profile write fails a clean run.
			defer func() {
				if perr := stopProfile(); perr != nil && err == nil {
					err = perr
				}
			}()
		}
		b, err := broker.New(broker.Config{Settings: settings, Logger: logger})
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		fmt.Fprintf(cmd.ErrOrStderr(), "runnel broker listening on %s", b.Addr())
		if h := b.HTTPAddr(); h != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), " (metrics and health on http://%s)", h)
		}
		fmt.Fprintln(cmd.ErrOrStderr())
		return b.Run(ctx)
	}
	return cmd
}

// startCPUProfile starts profiling into a new file at path; the returned
// func stops the profile and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
