package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataTimeout bounds the metadata round trip that produce, consume and
// perf make before they start, so an unreachable cluster or a missing topic
// is reported instead of waited on.
const metadataTimeout = 30 * time.Second

// globals holds the flags that every command shares.
type globals struct {
	brokers  string
	clientID string
}

// defaultBrokers is the --brokers default: $RUNNEL_BROKERS, else the
// conventional local listener.
func defaultBrokers() string {
	if b := strings.TrimSpace(os.Getenv("RUNNEL_BROKERS")); b != "" {
		return b
	}
	return "localhost:9092"
}

// seeds splits --brokers into host:port seeds.
func (g *globals) seeds() ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(g.brokers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no brokers: pass -b host:port[,host:port...] or set RUNNEL_BROKERS")
	}
	return out, nil
}

// newClient returns a franz-go client for the seed brokers. It does not
// connect: the first request does.
func (g *globals) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := g.seeds()
	if err != nil {
		return nil, err
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(g.clientID),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bad client settings: %w", err)
	}
	return cl, nil
}

// withClient runs fn with a client for the brokers and a deadline of
// timeout (a command's --timeout), and explains its error.
func (g *globals) withClient(cmd *cobra.Command, timeout time.Duration, fn func(ctx context.Context, cl *kgo.Client) error) error {
	cl, err := g.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	return g.explain(fn(ctx, cl))
}

// explain turns low-level client errors into messages that say what to do.
// Errors it does not recognise are returned unchanged.
func (g *globals) explain(err error) error {
	if err == nil {
		return nil
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &dnsErr),
		errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Errorf("cannot reach brokers %s: %w\n(is a broker running there? set -b/--brokers or RUNNEL_BROKERS)", g.brokers, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w talking to brokers %s\n(is a Kafka-compatible broker listening there? raise --timeout if the cluster is just slow)", err, g.brokers)
	}
	return err
}

// kafkaErr formats a broker error with the broker's optional message and a
// hint for the common mistakes.
func kafkaErr(err error, msg string) error {
	if msg != "" && !strings.Contains(err.Error(), msg) {
		err = fmt.Errorf("%w: %s", err, msg)
	}
	if h := hint(err); h != "" {
		return fmt.Errorf("%w\n(%s)", err, h)
	}
	return err
}

// hint says how to fix the broker errors a CLI user is likely to cause.
func hint(err error) string {
	switch {
	case errors.Is(err, kerr.InvalidReplicationFactor):
		return "lower -r/--replication-factor to at most the number of brokers"
	case errors.Is(err, kerr.InvalidPartitions):
		return "the partition count must be at least 1 and can only grow"
	case errors.Is(err, kerr.InvalidConfig):
		return "check the -c key=value pairs: names follow Kafka's topic configs, e.g. retention.ms=86400000"
	case errors.Is(err, kerr.InvalidTopicException):
		return "topic names use letters, digits, '.', '_' and '-', at most 249 characters"
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return "the broker denied this client; check its ACLs"
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return "the record is larger than the topic's max.message.bytes"
	case errors.Is(err, kgo.ErrRecordTimeout):
		return "no acknowledgement within --delivery-timeout: is the partition's leader up?"
	case strings.Contains(err.Error(), "broker is too old"): // franz-go does not export this error
		return "the broker does not implement a Kafka API this needs, e.g. consumer groups for -g/--group"
	case errors.Is(err, kerr.InvalidRegularExpression):
		return "the pattern is an RE2 regular expression, e.g. '^payments-'"
	case errors.Is(err, kerr.PolicyViolation):
		return "a broker-side policy rejected the request"
	}
	return ""
}

// errTopicMissing is wrapped by every "topic does not exist" error so callers
// and tests can match it with errors.Is.
var errTopicMissing = kerr.UnknownTopicOrPartition

// missingTopicError says a topic does not exist and what to do about it.
type missingTopicError struct {
	topic string
	hint  string
}

func (e *missingTopicError) Error() string {
	return fmt.Sprintf("topic %q does not exist (%s)", e.topic, e.hint)
}

func (e *missingTopicError) Unwrap() error { return errTopicMissing }

func topicMissing(topic string) error {
	return &missingTopicError{topic, fmt.Sprintf("create it with \"runnel topic create %s\", or see \"runnel topic list\"", topic)}
}

// topicPartitions asks the cluster for topic's partition numbers, sorted.
// With autoCreate the request lets a broker that auto-creates topics do so,
// as a Kafka producer would.
func topicPartitions(ctx context.Context, cl *kgo.Client, topic string, autoCreate bool) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = autoCreate
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		err := kerr.ErrorForCode(t.ErrorCode)
		switch {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return nil, topicMissing(topic)
		case errors.Is(err, kerr.LeaderNotAvailable):
			// Just auto-created: the client retries until it has a leader.
		case err != nil:
			return nil, kafkaErr(fmt.Errorf("topic %q: %w", topic, err), "")
		}
		ps := make([]int32, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			ps = append(ps, p.Partition)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		return ps, nil
	}
	return nil, topicMissing(topic)
}

// checkPartition reports whether p is one of ps, with an error that lists
// the valid range when it is not.
func checkPartition(topic string, ps []int32, p int32) error {
	for _, q := range ps {
		if q == p {
			return nil
		}
	}
	if len(ps) == 0 {
		return fmt.Errorf("topic %q has no partitions yet; try again in a moment", topic)
	}
	return fmt.Errorf("partition %d does not exist: topic %q has %d partitions (0-%d)", p, topic, len(ps), ps[len(ps)-1])
}
