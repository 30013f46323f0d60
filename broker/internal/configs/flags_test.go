package configs

import (
	"bytes"
	"io"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func newFlagSet() (*pflag.FlagSet, func() map[string]string) {
	fs := pflag.NewFlagSet("runnel", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, RegisterFlags(fs)
}

func TestFlagsRoundTrip(t *testing.T) {
	fs, flags := newFlagSet()
	if got := flags(); len(got) != 0 {
		t.Errorf("before parsing: %v", got)
	}
	err := fs.Parse([]string{
		"--num.partitions=3",
		"--log.retention.ms", " 1000",
		"--auto.create.topics.enable", // no value: true
		"--delete.topic.enable=FALSE",
		"--log.cleanup.policy=compact, delete",
		"--listeners=PLAINTEXT://127.0.0.1:0",
		"--runnel.http.listener=",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"num.partitions":            "3",
		"log.retention.ms":          "1000",
		"auto.create.topics.enable": "true",
		"delete.topic.enable":       "false",
		"log.cleanup.policy":        "compact,delete",
		"listeners":                 "PLAINTEXT://127.0.0.1:0",
		"runnel.http.listener":      "",
	}
	got := flags()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %v\nwant %v", got, want)
	}

	// Flags overlay the file; the result parses.
	static := map[string]string{"num.partitions": "1", "broker.rack": "r1"}
	maps.Copy(static, got)
	b, err := ParseBroker(static)
	if err != nil {
		t.Fatal(err)
	}
	if b.NumPartitions != 3 || b.BrokerRack != "r1" || b.DeleteTopicEnable || b.HTTPListener != "" || b.Listeners[0].Port != 0 {
		t.Errorf("%+v", b)
	}
	// The returned map is a copy.
	got["num.partitions"] = "99"
	if flags()["num.partitions"] != "3" {
		t.Error("flags() returned shared state")
	}
}

func TestFlagsRejectBadValues(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"--num.partitions=0", `invalid argument "0" for "--num.partitions" flag: must be at least 1`},
		{"--log.flush=sometimes", `invalid argument "sometimes" for "--log.flush" flag: must be one of: always, never`},
		{"--retention.ms=5", `unknown flag: --retention.ms`},
	} {
		fs, _ := newFlagSet()
		err := fs.Parse([]string{tc.arg})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.arg, err, tc.want)
		}
	}
}

func TestFlagsUsage(t *testing.T) {
	fs, _ := newFlagSet()
	n := 0
	fs.VisitAll(func(*pflag.Flag) { n++ })
	if n != len(BrokerDefs()) {
		t.Errorf("%d flags, want one per broker key (%d)", n, len(BrokerDefs()))
	}
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	fs.PrintDefaults()
	usage := buf.String()
	for _, want := range []string{
		"--num.partitions int ",
		"Allowed: [1,...]. (default 1)",
		"--auto.create.topics.enable ",
		"--log.retention.ms int ",
		"Dynamic.",
		`--listeners string `,
		`(default "PLAINTEXT://:9092")`,
		"--log.cleanup.policy list ",
	} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage lacks %q", want)
		}
	}
	if strings.Contains(usage, "auto.create.topics.enable bool") {
		t.Error("boolean flags should not show a value type")
	}
}
