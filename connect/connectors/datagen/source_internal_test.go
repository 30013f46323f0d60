package datagen

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect"
)

func TestPacer(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at   time.Duration // after t0
		want int
		n    int           // granted
		wait time.Duration // when n is 0
	}
	for _, tc := range []struct {
		name  string
		rate  float64
		steps []step
	}{
		{"unlimited", 0, []step{{0, 1000, 1000, 0}, {0, 5, 5, 0}}},
		{"one at first, then as due", 10, []step{
			{0, 100, 1, 0},
			{0, 100, 0, 100 * time.Millisecond},
			{50 * time.Millisecond, 100, 0, 50 * time.Millisecond},
			{150 * time.Millisecond, 100, 1, 0},
			{950 * time.Millisecond, 100, 8, 0}, // records 2..9 are due by 0.9 s
			{950 * time.Millisecond, 100, 0, 50 * time.Millisecond},
		}},
		{"want caps", 100, []step{{0, 1, 1, 0}, {time.Second, 5, 5, 0}, {time.Second, 500, 95, 0}}},
		{"no rush after a stall", 10, []step{
			{0, 100, 1, 0},
			{time.Minute, 100, 10, 0}, // a second's worth, not 600
			{time.Minute, 100, 0, 100 * time.Millisecond},
			{time.Minute + 100*time.Millisecond, 100, 1, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pacer{rate: tc.rate}
			for i, s := range tc.steps {
				n, wait := p.take(t0.Add(s.at), s.want)
				if n != s.n || (n == 0 && (wait < s.wait-time.Millisecond || wait > s.wait+time.Millisecond)) {
					t.Fatalf("step %d: take at +%v = %d, wait %v; want %d, wait %v", i, s.at, n, wait, s.n, s.wait)
				}
			}
		})
	}
}

func TestTaskConfigsSplitStores(t *testing.T) {
	p := sourcePlugin()
	for _, tc := range []struct {
		schema   string
		stores   string
		maxTasks int
		want     int
	}{
		{RetailSales, "10", 1, 1},
		{RetailSales, "10", 4, 4},
		{RetailShipments, "3", 8, 3},
		{Users, "3", 8, 8},
	} {
		cfg, errs := p.Config.Parse(map[string]string{keyTopic: "t", keySchema: tc.schema, keyStores: tc.stores})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		confs, err := p.TaskConfigs(cfg, tc.maxTasks)
		if err != nil {
			t.Fatal(err)
		}
		if len(confs) != tc.want {
			t.Fatalf("%s with %s stores and tasks.max %d: %d tasks, want %d", tc.schema, tc.stores, tc.maxTasks, len(confs), tc.want)
		}
		var got []string
		for _, c := range confs {
			got = append(got, c[keyTask]+"/"+c[keyTasks])
			if _, err := NewGenerator(GeneratorConfig{Schema: tc.schema, Task: c.Int(keyTask), Tasks: c.Int(keyTasks), Stores: c.Int(keyStores)}); err != nil {
				t.Fatal(err)
			}
		}
		var want []string
		for i := range tc.want {
			want = append(want, strconv.Itoa(i)+"/"+strconv.Itoa(tc.want))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("tasks %v, want %v", got, want)
		}
	}
}

func TestConfigChecks(t *testing.T) {
	p := sourcePlugin()
	for _, tc := range []struct {
		raw     map[string]string
		wantKey string
	}{
		{map[string]string{keySchema: RetailSales}, keyTopic},
		{map[string]string{keyTopic: "t", keySchema: "orders"}, keySchema},
		{map[string]string{keyTopic: "t", keyRate: "-1"}, keyRate},
		{map[string]string{keyTopic: "t", keyStores: "0"}, keyStores},
		{map[string]string{keyTopic: "t", keyStartTime: "yesterday"}, keyStartTime},
	} {
		_, errs := p.Config.Parse(tc.raw)
		if len(errs) != 1 || errs[0].Key != tc.wantKey {
			t.Errorf("Parse(%v) = %v, want one error about %s", tc.raw, errs, tc.wantKey)
		}
	}
	cfg, _ := p.Config.Parse(map[string]string{keyTopic: "t", keySchema: RetailShipments, keyStores: "1000", keyProducts: "10000"})
	if errs := p.Validate(cfg); len(errs) != 1 {
		t.Errorf("10 million shipment pairs accepted: %v", errs)
	}
}

// The values and their schemas go through the json converter with
// schemas enabled.
func TestValuesMatchTheirSchemas(t *testing.T) {
	reg := connect.NewRegistry()
	jp, err := reg.Lookup("json")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := jp.NewConverter(connect.Config{"schemas.enable": "true"}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range Schemas {
		g, err := NewGenerator(GeneratorConfig{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			r := g.Next()
			if _, err := conv.FromConnect("t", g.ValueSchema(), r.Value); err != nil {
				t.Fatalf("%s: %v: %v", schema, r.Value, err)
			}
		}
	}
}
