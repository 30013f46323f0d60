package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/server"
)

// Config configures a broker.
type Config struct {
	// Settings are broker configs by their Kafka names. Keys not set take
	// their defaults; unknown keys are an error.
	Settings map[string]string
	// FS is the file system for all data; nil means the operating system's.
	// Tests use an in-memory one to simulate crashes.
	FS vfs.FS
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// ControllerListener, when set, is this node's already bound
	// controller listener, whose address controller.quorum.voters gives
	// for node.id: tests bind port 0 for every voter first. The broker
	// owns it. Nil: the broker listens on its voter address itself.
	ControllerListener net.Listener
}

// Broker is one running broker node.
type Broker struct {
	srv      *server.Server
	registry *prometheus.Registry
	http     *http.Server
	httpLn   net.Listener
	logger   *slog.Logger

	closeOnce sync.Once
	closeErr  error
	runOnce   sync.Once
}

// LoadConfigFile reads broker settings from a YAML file or, when the name
// ends in .properties, Kafka's properties format.
func LoadConfigFile(path string) (map[string]string, error) {
	return configs.LoadFile(path)
}

// New opens the broker's data and binds its listeners. Call Run to serve.
func New(cfg Config) (*Broker, error) {
	parsed, err := configs.ParseBroker(cfg.Settings)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv, err := server.New(server.Options{
		Config: parsed, Static: cfg.Settings, FS: cfg.FS, Logger: logger, Registry: reg,
		ControllerListener: cfg.ControllerListener,
	})
	if err != nil {
		return nil, err
	}
	b := &Broker{srv: srv, registry: reg, logger: logger}
	if parsed.HTTPListener != "" {
		ln, err := net.Listen("tcp", parsed.HTTPListener)
		if err != nil {
			srv.Close()
			return nil, fmt.Errorf("broker: listen on runnel.http.listener %s: %w", parsed.HTTPListener, err)
		}
		b.httpLn = ln
		b.http = &http.Server{Handler: b.httpHandler(), ReadHeaderTimeout: 10 * time.Second}
	}
	return b, nil
}

func (b *Broker) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.registry, promhttp.HandlerOpts{Registry: b.registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !b.srv.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Run serves until ctx ends or Close is called, then closes the broker. It
// returns nil after a clean stop.
func (b *Broker) Run(ctx context.Context) error {
	var err error
	ran := false
	b.runOnce.Do(func() {
		ran = true
		if b.http != nil {
			go func() {
				if err := b.http.Serve(b.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
					b.logger.Error("http server stopped", "err", err)
				}
			}()
		}
		b.logger.Info("broker serving", "addr", b.Addr(), "http", b.HTTPAddr())
		err = b.srv.Serve(ctx)
		err = errors.Join(err, b.Close())
	})
	if !ran {
		return errors.New("broker: Run called twice")
	}
	return err
}

// Addr is the address of the Kafka listener, host:port.
func (b *Broker) Addr() string { return b.srv.Addr().String() }

// HTTPAddr is the address of the metrics and health endpoints, or "" when
// runnel.http.listener is empty.
func (b *Broker) HTTPAddr() string {
	if b.httpLn == nil {
		return ""
	}
	return b.httpLn.Addr().String()
}

// Close stops the broker and waits for it. It is idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		if b.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			b.closeErr = b.http.Shutdown(ctx)
			cancel()
		}
		b.closeErr = errors.Join(b.closeErr, b.srv.Close())
	})
	return b.closeErr
}
