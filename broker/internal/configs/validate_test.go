package configs

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		key, in string
		topic   bool
		want    string // canonical value, or the error message when err
		err     bool
	}{
		// Types.
		{key: "preallocate", in: "TRUE", topic: true, want: "true"},
		{key: "preallocate", in: " false ", topic: true, want: "false"},
		{key: "preallocate", in: "yes", topic: true, err: true, want: `invalid value "yes" for config preallocate: must be true or false`},
		{key: "segment.bytes", in: " +2097152", topic: true, want: "2097152"},
		{key: "segment.bytes", in: "1e9", topic: true, err: true, want: `invalid value "1e9" for config segment.bytes: must be a 32-bit integer`},
		{key: "segment.bytes", in: "4294967296", topic: true, err: true, want: `invalid value "4294967296" for config segment.bytes: must be a 32-bit integer`},
		{key: "retention.ms", in: "9223372036854775807", topic: true, want: "9223372036854775807"},
		{key: "retention.ms", in: "9223372036854775808", topic: true, err: true, want: `invalid value "9223372036854775808" for config retention.ms: must be a 64-bit integer`},
		{key: "offsets.topic.replication.factor", in: "40000", err: true, want: `invalid value "40000" for config offsets.topic.replication.factor: must be a 16-bit integer`},
		{key: "min.cleanable.dirty.ratio", in: "1", topic: true, want: "1.0"},
		{key: "min.cleanable.dirty.ratio", in: ".25", topic: true, want: "0.25"},
		{key: "min.cleanable.dirty.ratio", in: "NaN", topic: true, err: true, want: `invalid value "NaN" for config min.cleanable.dirty.ratio: must be a finite number`},
		{key: "cleanup.policy", in: " compact , delete ", topic: true, want: "compact,delete"},
		{key: "cleanup.policy", in: "", topic: true, want: ""},

		// Ranges and enums.
		{key: "segment.bytes", in: "1048575", topic: true, err: true, want: `invalid value "1048575" for config segment.bytes: must be at least 1048576`},
		{key: "segment.bytes", in: "1048576", topic: true, want: "1048576"},
		{key: "retention.ms", in: "-1", topic: true, want: "-1"},
		{key: "retention.ms", in: "-2", topic: true, err: true, want: `invalid value "-2" for config retention.ms: must be at least -1`},
		{key: "retention.bytes", in: "-5", topic: true, want: "-5"},
		{key: "min.cleanable.dirty.ratio", in: "1.5", topic: true, err: true, want: `invalid value "1.5" for config min.cleanable.dirty.ratio: must be between 0.0 and 1.0`},
		{key: "compression.type", in: "zstd", topic: true, want: "zstd"},
		{key: "compression.type", in: "ZSTD", topic: true, err: true, want: `invalid value "ZSTD" for config compression.type: must be one of: uncompressed, zstd, lz4, snappy, gzip, producer`},
		{key: "compression.gzip.level", in: "-1", topic: true, want: "-1"},
		{key: "compression.gzip.level", in: "0", topic: true, err: true, want: `invalid value "0" for config compression.gzip.level: must be between 1 and 9, or -1`},
		{key: "compression.zstd.level", in: "-131072", topic: true, want: "-131072"},
		{key: "compression.lz4.level", in: "18", topic: true, err: true, want: `invalid value "18" for config compression.lz4.level: must be between 1 and 17`},
		{key: "message.timestamp.type", in: "LogAppendTime", topic: true, want: "LogAppendTime"},
		{key: "message.timestamp.type", in: "logappendtime", topic: true, err: true, want: `invalid value "logappendtime" for config message.timestamp.type: must be one of: CreateTime, LogAppendTime`},
		{key: "cleanup.policy", in: "delete,remove", topic: true, err: true, want: `invalid value "delete,remove" for config cleanup.policy: must be a list of: delete, compact`},
		{key: "cleanup.policy", in: "delete,delete", topic: true, err: true, want: `invalid value "delete,delete" for config cleanup.policy: lists delete twice`},
		{key: "cleanup.policy", in: "delete,,compact", topic: true, err: true, want: `invalid value "delete,,compact" for config cleanup.policy: must be a comma-separated list without empty items`},
		{key: "leader.replication.throttled.replicas", in: "*", topic: true, want: "*"},
		{key: "leader.replication.throttled.replicas", in: "0:1, 1:2", topic: true, want: "0:1,1:2"},
		{key: "leader.replication.throttled.replicas", in: "0:x", topic: true, err: true, want: `invalid value "0:x" for config leader.replication.throttled.replicas: must be * or a list of partition:broker pairs`},
		{key: "log.flush", in: "never", want: "never"},
		{key: "log.flush", in: "sometimes", err: true, want: `invalid value "sometimes" for config log.flush: must be one of: always, never`},
		{key: "num.partitions", in: "0", err: true, want: `invalid value "0" for config num.partitions: must be at least 1`},
		{key: "default.replication.factor", in: "0", err: true, want: `invalid value "0" for config default.replication.factor: must be between 1 and 32767`},
		{key: "process.roles", in: "broker,voter", err: true, want: `invalid value "broker,voter" for config process.roles: must be a list of: broker, controller`},
		{key: "listeners", in: "PLAINTEXT://:9092, internal://127.0.0.1:9093", want: "PLAINTEXT://:9092, internal://127.0.0.1:9093"},
		{key: "listeners", in: "localhost:9092", err: true, want: `invalid value "localhost:9092" for config listeners: "localhost:9092" must look like NAME://host:port`},
		{key: "listeners", in: "PLAINTEXT://:9092,PLAINTEXT://:9093", err: true, want: `invalid value "PLAINTEXT://:9092,PLAINTEXT://:9093" for config listeners: listener name PLAINTEXT appears twice`},
		{key: "listeners", in: "PLAINTEXT://:70000", err: true, want: `invalid value "PLAINTEXT://:70000" for config listeners: port in "PLAINTEXT://:70000" must be between 0 and 65535`},
		{key: "listeners", in: "PLAINTEXT://[::1]:9092", want: "PLAINTEXT://[::1]:9092"},
		{key: "listener.security.protocol.map", in: "A:PLAINTEXT,B:TLS", err: true, want: `invalid value "A:PLAINTEXT,B:TLS" for config listener.security.protocol.map: protocol "TLS" of B must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{key: "controller.quorum.voters", in: "1@a:9093,2@b:9093", want: "1@a:9093,2@b:9093"},
		{key: "controller.quorum.voters", in: "1@a:9093,1@b:9093", err: true, want: `invalid value "1@a:9093,1@b:9093" for config controller.quorum.voters: voter id 1 appears twice`},
		{key: "controller.quorum.voters", in: "1@a:9093,2@A:9093", err: true, want: `invalid value "1@a:9093,2@A:9093" for config controller.quorum.voters: voters 1 and 2 both use A:9093`},
		{key: "controller.quorum.voters", in: "a:9093", err: true, want: `invalid value "a:9093" for config controller.quorum.voters: "a:9093" must look like id@host:port`},
		{key: "runnel.http.listener", in: "", want: ""},
		{key: "runnel.http.listener", in: "127.0.0.1:0", want: "127.0.0.1:0"},
		{key: "runnel.http.listener", in: "9099", err: true, want: `invalid value "9099" for config runnel.http.listener: must be host:port (host may be empty), or empty to disable`},
		{key: "cluster.id", in: "MkU3OEVBNTcwNTJENDM2Qk", want: "MkU3OEVBNTcwNTJENDM2Qk"},
		{key: "cluster.id", in: "my cluster", err: true, want: `invalid value "my cluster" for config cluster.id: may contain only ASCII letters, digits, _ and -`},
		{key: "log.dirs", in: "/a,/a", err: true, want: `invalid value "/a,/a" for config log.dirs: lists /a twice`},
		{key: "log.dir", in: " ", err: true, want: `invalid value " " for config log.dir: must not be empty`},
	} {
		lookup := BrokerDef
		if tc.topic {
			lookup = TopicDef
		}
		d, ok := lookup(tc.key)
		if !ok {
			t.Fatalf("no config %s", tc.key)
		}
		got, err := d.Normalize(tc.in)
		switch {
		case tc.err && err == nil:
			t.Errorf("%s=%q: no error, want %q", tc.key, tc.in, tc.want)
		case tc.err && err.Error() != tc.want:
			t.Errorf("%s=%q:\n got error %q\nwant error %q", tc.key, tc.in, err, tc.want)
		case tc.err && !errors.Is(err, ErrInvalidConfig):
			t.Errorf("%s=%q: error does not wrap ErrInvalidConfig", tc.key, tc.in)
		case !tc.err && err != nil:
			t.Errorf("%s=%q: %v", tc.key, tc.in, err)
		case !tc.err && got != tc.want:
			t.Errorf("%s=%q: got %q, want %q", tc.key, tc.in, got, tc.want)
		}
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]string
		want string // "" for no error
		kind error
	}{
		{in: nil},
		{in: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}},
		{in: map[string]string{"retention.msx": "1"}, want: `unknown topic config "retention.msx" (did you mean retention.ms?)`, kind: ErrUnknownConfig},
		{in: map[string]string{"log.retention.ms": "1"}, want: `unknown topic config "log.retention.ms" (log.retention.ms is the broker-wide default; the topic config is retention.ms)`, kind: ErrUnknownConfig},
		{in: map[string]string{"num.partitions": "1"}, want: `unknown topic config "num.partitions" (num.partitions is a broker config)`, kind: ErrUnknownConfig},
		{in: map[string]string{"Retention_MS": "1"}, want: `unknown topic config "Retention_MS" (did you mean retention.ms?)`, kind: ErrUnknownConfig},
		{in: map[string]string{"zzz": "1"}, want: `unknown topic config "zzz"`, kind: ErrUnknownConfig},
		// The first bad key in sorted order is reported.
		{in: map[string]string{"segment.ms": "0", "retention.ms": "x"}, want: `invalid value "x" for config retention.ms: must be a 64-bit integer`, kind: ErrInvalidConfig},
	} {
		err := ValidateTopicConfigs(tc.in)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.in, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v:\n got %v\nwant %s", tc.in, err, tc.want)
		}
		if !errors.Is(err, tc.kind) {
			t.Errorf("%v: error does not wrap %v", tc.in, tc.kind)
		}
	}
}

func TestNormalizeTopicConfigs(t *testing.T) {
	got, err := NormalizeTopicConfigs(map[string]string{"cleanup.policy": "compact, delete", "preallocate": "True"})
	if err != nil {
		t.Fatal(err)
	}
	if got["cleanup.policy"] != "compact,delete" || got["preallocate"] != "true" || len(got) != 2 {
		t.Errorf("got %v", got)
	}
}

func TestNormalizeDynamicBrokerConfigs(t *testing.T) {
	got, err := NormalizeDynamicBrokerConfigs(map[string]string{"log.retention.ms": " 1000 ", "message.max.bytes": "2000000"})
	if err != nil || got["log.retention.ms"] != "1000" || got["message.max.bytes"] != "2000000" {
		t.Errorf("got %v, %v", got, err)
	}

	_, err = NormalizeDynamicBrokerConfigs(map[string]string{"num.partitions": "3"})
	if !errors.Is(err, ErrReadOnlyConfig) || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("read-only key: %v", err)
	}
	if want := "config num.partitions cannot be changed dynamically; set it in the config file or a flag and restart"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	// log.retention.hours is a synonym but, as in Kafka, only the first
	// name of a synonym list is dynamic.
	if _, err := NormalizeDynamicBrokerConfigs(map[string]string{"log.retention.hours": "1"}); !errors.Is(err, ErrReadOnlyConfig) {
		t.Errorf("log.retention.hours: %v", err)
	}
	_, err = NormalizeDynamicBrokerConfigs(map[string]string{"retention.ms": "1"})
	if !errors.Is(err, ErrUnknownConfig) || !strings.Contains(err.Error(), "its broker-wide default is log.retention.ms / log.retention.minutes / log.retention.hours") {
		t.Errorf("topic key on broker: %v", err)
	}
	if _, err := NormalizeDynamicBrokerConfigs(map[string]string{"min.insync.replicas": "0"}); !errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrReadOnlyConfig) {
		t.Errorf("bad value: %v", err)
	}
}

func TestSensitiveValueHidden(t *testing.T) {
	d := &Def{Name: "x.password", Type: Password, Sensitive: true, Validate: func(string) error { return errors.New("too short") }}
	_, err := d.Normalize("hunter2")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the secret: %v", err)
	}
}
