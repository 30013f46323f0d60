package connect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/configfile"
)

// pipeline is what a task's records pass through besides the task:
// converters, transforms and the error policy.
type pipeline struct {
	r        *taskRunner
	keyConv  Converter
	valConv  Converter
	chain    *TransformChain
	tolerate bool // errors.tolerance=all
	logErrs  bool
	retryFor time.Duration // <0: forever
	retryMax time.Duration
	dlq      string
	dlqCtx   bool
}

func newPipeline(r *taskRunner, conf Config) (*pipeline, error) {
	p := &pipeline{
		r:        r,
		tolerate: strings.EqualFold(conf[KeyErrorsTolerance], "all"),
		logErrs:  conf.Bool(KeyErrorsLogEnable),
		retryFor: conf.Millis(KeyErrorsRetryTimeout),
		retryMax: conf.Millis(KeyErrorsRetryDelayMax),
		dlq:      strings.TrimSpace(conf[KeyDLQTopic]),
		dlqCtx:   conf.Bool(KeyDLQContextHeaders),
	}
	var err error
	if p.keyConv, err = r.w.converter(conf, KeyKeyConverter, true); err != nil {
		return nil, err
	}
	if p.valConv, err = r.w.converter(conf, KeyValueConverter, false); err != nil {
		return nil, err
	}
	chain, errs := NewTransformChain(r.w.reg, conf)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, errors.Join(keyErrs(errs)...))
	}
	p.chain = chain
	return p, nil
}

func keyErrs(errs []KeyError) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// converter builds the key or value converter of a connector: its own
// key.converter, or the worker's, configured by the keys under the
// converter's prefix (the connector's if it names its own class).
func (w *worker) converter(conf Config, key string, isKey bool) (Converter, error) {
	src := conf
	if strings.TrimSpace(conf[key]) == "" {
		src = w.cfg
	}
	class := strings.TrimSpace(src[key])
	p, err := w.reg.Lookup(class)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, key, err)
	}
	if p.Type != ConverterPlugin {
		return nil, fmt.Errorf("%w: %s: %s is a %s plugin, not a converter", ErrInvalidConfig, key, class, p.Type)
	}
	cc, errs := p.Config.Parse(src.Sub(key + "."))
	if len(errs) > 0 {
		for i := range errs {
			errs[i].Key = key + "." + errs[i].Key
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, errors.Join(keyErrs(errs)...))
	}
	return p.NewConverter(cc, isKey)
}

// stageError is a failure in one stage of the pipeline for one record.
type stageError struct {
	stage string // convert, transform, ...
	err   error
}

func (e *stageError) Error() string { return fmt.Sprintf("error in stage %s: %v", e.stage, e.err) }
func (e *stageError) Unwrap() error { return e.err }

// tolerated decides what a failed record does: with errors.tolerance=all
// it is logged if asked and counted, and the caller skips it (sinks send
// it to the dead letter queue); otherwise the error fails the task.
func (p *pipeline) tolerated(err *stageError, where string) bool {
	p.r.w.metrics.errs.WithLabelValues(p.r.id.Connector, itoa(p.r.id.Task), err.stage).Inc()
	if !p.tolerate {
		return false
	}
	if p.logErrs {
		p.r.log.Warn("skipping a record that failed", "stage", err.stage, "record", where, "err", err.err)
	}
	return true
}

// retry runs op until it succeeds, fails with an error that is not
// retriable, or errors.retry.timeout has passed; waits double from
// 300 ms up to errors.retry.delay.max.ms.
func (p *pipeline) retry(ctx context.Context, forever bool, op func() error) error {
	start := time.Now()
	wait := 300 * time.Millisecond
	for {
		err := op()
		var re *RetriableError
		if err == nil || !errors.As(err, &re) {
			return err
		}
		if !forever && (p.retryFor >= 0 && time.Since(start)+wait > p.retryFor) {
			return err
		}
		p.r.log.Info("retrying after a retriable error", "err", err, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, p.retryMax)
	}
}

// deadLetter writes a sink record that failed to the dead letter queue,
// with its original bytes, and context headers when enabled.
func (p *pipeline) deadLetter(ctx context.Context, in *kgo.Record, err *stageError) error {
	if p.dlq == "" {
		return nil
	}
	out := &kgo.Record{Topic: p.dlq, Key: in.Key, Value: in.Value, Headers: append([]kgo.RecordHeader(nil), in.Headers...)}
	if p.dlqCtx {
		h := func(k, v string) {
			out.Headers = append(out.Headers, kgo.RecordHeader{Key: "__connect.errors." + k, Value: []byte(v)})
		}
		h("topic", in.Topic)
		h("partition", strconv.Itoa(int(in.Partition)))
		h("offset", strconv.FormatInt(in.Offset, 10))
		h("connector.name", p.r.id.Connector)
		h("task.id", strconv.Itoa(p.r.id.Task))
		h("stage", err.stage)
		h("class.name", p.r.plugin.Class)
		h("exception.class.name", fmt.Sprintf("%T", errors.Unwrap(err)))
		h("exception.message", err.err.Error())
		h("exception.stacktrace", trace(err.err))
	}
	if perr := p.r.w.dlq.ProduceSync(ctx, out).FirstErr(); perr != nil {
		return fmt.Errorf("connect: writing to the dead letter queue %s: %w", p.dlq, perr)
	}
	p.r.w.metrics.dlq.WithLabelValues(p.r.id.Connector, itoa(p.r.id.Task)).Inc()
	return nil
}

// Secrets: a config value may name a secret instead of holding it, as
// Kafka's config providers do: ${env:NAME} is an environment variable,
// ${file:/path/to/file.properties:key} a key of a properties (or YAML)
// file, ${file:/path/to/file} a whole file (trailing newline trimmed).
// Stored configs and REST responses keep the reference; only the task
// sees the secret.
var secretRef = regexp.MustCompile(`\$\{(env|file):([^}]*)\}`)

// ErrSecret wraps a reference that cannot be resolved.
var ErrSecret = errors.New("connect: cannot resolve a secret")

func resolveSecrets(cfg Config) (Config, error) {
	out, cloned := cfg, false
	for k, v := range cfg {
		if !strings.Contains(v, "${") {
			continue
		}
		var rerr error
		nv := secretRef.ReplaceAllStringFunc(v, func(ref string) string {
			m := secretRef.FindStringSubmatch(ref)
			s, err := resolveSecret(m[1], m[2])
			if err != nil && rerr == nil {
				rerr = fmt.Errorf("%w for %s: %v", ErrSecret, k, err)
			}
			return s
		})
		if rerr != nil {
			return nil, rerr
		}
		if nv != v {
			if !cloned {
				out, cloned = cfg.Clone(), true
			}
			out[k] = nv
		}
	}
	return out, nil
}

func resolveSecret(provider, ref string) (string, error) {
	switch provider {
	case "env":
		v, ok := os.LookupEnv(ref)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", ref)
		}
		return v, nil
	case "file":
		path, key := ref, ""
		if i := strings.LastIndex(ref, ":"); i > 0 {
			path, key = ref[:i], ref[i+1:]
		}
		if key == "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return "", err
			}
			return strings.TrimRight(string(b), "\r\n"), nil
		}
		entries, err := configfile.Read(path)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if e.Key == key {
				return e.Value, nil
			}
		}
		return "", fmt.Errorf("%s has no key %s", path, key)
	}
	return "", fmt.Errorf("unknown config provider %s", provider)
}

// masked returns cfg for a response: the values of PASSWORD keys that are
// not secret references are replaced by [hidden].
func masked(cfg Config, def *ConfigDef) Config {
	out := cfg.Clone()
	for _, k := range def.Keys() {
		if v, ok := out[k.Name]; ok && k.Type == TypePassword && !secretRef.MatchString(v) {
			out[k.Name] = HiddenValue
		}
	}
	return out
}
