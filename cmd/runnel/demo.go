package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runnel-io/runnel/retail-demo/demo"
	"github.com/runnel-io/runnel/retail-demo/retail"
)

// newDemoCmd is `runnel demo`: the demos that show the platform working.
func newDemoCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a demo of the platform (broker, Streams, Connect) with a live dashboard",
	}
	cmd.AddCommand(newDemoRetailCmd(g))
	return cmd
}

func newDemoRetailCmd(g *globals) *cobra.Command {
	var (
		configPath, dataDir, dashboard, logLevel string
		roles                                    []string
		rate                                     float64
		sales                                    int64
	)
	cmd := &cobra.Command{
		Use:   "retail",
		Short: "Sales and shipments in, stock, reorders and price adjustments out, on a live dashboard",
		Long: `The retail reorder demo. A generator writes sales and shipments of stores
and products; a Streams app keeps stock and sales velocity per store and
product and emits reorders (stock at the reorder point) and price
adjustments (overstocked: markdown; scarce and selling fast: raise); Connect
takes sales in over HTTP (a point-of-sale endpoint) and writes reorders and
price adjustments to files (and PostgreSQL when configured); the dashboard
shows it all live.

Without --brokers it starts an embedded single-node broker with its data in
data_dir (emptied at every start) and runs every part in this process. With
--brokers, --role runs one part (or several, comma-separated) against that
cluster, so that each can run as its own process. Every parameter is in one
YAML file: retail-demo/retail.yaml lists them with their defaults.`,
		Example: `  runnel demo retail                                  # everything, on an embedded broker
  runnel demo retail --config my-retail.yaml --rate 1000
  runnel demo retail -b localhost:9092 --role app      # one part against a cluster
  runnel demo retail -b localhost:9092 --role generator,connect,dashboard`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, "text")
			if err != nil {
				return err
			}
			cfg := retail.DefaultConfig()
			if configPath != "" {
				if cfg, err = retail.LoadConfig(configPath); err != nil {
					return err
				}
			}
			f := cmd.Flags()
			if f.Changed("brokers") || os.Getenv("RUNNEL_BROKERS") != "" {
				if cfg.Brokers, err = g.seeds(); err != nil {
					return err
				}
			}
			if f.Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			if f.Changed("dashboard") {
				cfg.Dashboard.Listen = dashboard
			}
			if f.Changed("rate") {
				cfg.Generator.Rate = rate
			}
			if f.Changed("sales") {
				cfg.Generator.Sales = sales
			}
			var rs []string
			for _, r := range roles {
				rs = append(rs, strings.Split(r, ",")...)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return demo.Run(ctx, demo.Options{Config: cfg, Roles: rs, Out: cmd.OutOrStdout(), Logger: logger})
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "the demo's YAML config (default: the built-in one, as retail-demo/retail.yaml)")
	f.StringSliceVar(&roles, "role", []string{demo.RoleAll}, "parts to run: all, or some of generator, app, connect, dashboard (needs --brokers)")
	f.StringVar(&dataDir, "data-dir", "", "data_dir: broker log, app state, Connect offsets, output files (default .data/retail)")
	f.StringVar(&dashboard, "dashboard", "", "dashboard.listen: the dashboard's host:port (default 127.0.0.1:8080)")
	f.Float64Var(&rate, "rate", 0, "generator.rate: sales a second, 0 as fast as possible (default 200)")
	f.Int64Var(&sales, "sales", 0, "generator.sales: stop generating after so many sales (default 0: never)")
	f.StringVar(&logLevel, "log-level", "error", "log level: debug, info, warn, error")
	return cmd
}
