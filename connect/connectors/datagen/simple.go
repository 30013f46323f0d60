package datagen

import (
	"fmt"
	"time"
)

// users and pageviews are small streams in the shape of Confluent's
// datagen quickstarts: 100 users in 9 regions viewing 100 pages. Each
// task is an independent stream.

var (
	userSchema = structSchema("io.runnel.datagen.User",
		field("registertime", timestampSchema), field("userid", stringSchema),
		field("regionid", stringSchema), field("gender", stringSchema))
	pageviewSchema = structSchema("io.runnel.datagen.Pageview",
		field("viewtime", timestampSchema), field("userid", stringSchema), field("pageid", stringSchema))
)

// users is a stream of profile updates, one every ten seconds of
// simulated time; the record time is the update's.
type users struct {
	seed, task uint64
	start      time.Time
}

func (u *users) at(g, seq int64) Record {
	r := rng{hash(u.seed, tagUser, u.task, uint64(g))}
	ms := u.start.UnixMilli() + g*10_000 + int64(r.float()*10_000)
	id := fmt.Sprintf("User_%d", 1+r.intn(100))
	return Record{Seq: seq, Key: id, Time: time.UnixMilli(ms).UTC(), Value: map[string]any{
		"registertime": ms - int64(r.float()*3*365*float64(dayMs)),
		"userid":       id,
		"regionid":     fmt.Sprintf("Region_%d", 1+r.intn(9)),
		"gender":       []string{"MALE", "FEMALE", "OTHER"}[r.intn(3)],
	}}
}

func (u *users) firstAt(time.Time) int64 { return 0 }

// pageviews is a stream of page views, one a second of simulated time.
type pageviews struct {
	seed, task uint64
	start      time.Time
}

func (p *pageviews) at(g, seq int64) Record {
	r := rng{hash(p.seed, tagPageview, p.task, uint64(g))}
	ms := p.start.UnixMilli() + g*1000 + int64(r.float()*1000)
	id := fmt.Sprintf("User_%d", 1+r.intn(100))
	return Record{Seq: seq, Key: id, Time: time.UnixMilli(ms).UTC(), Value: map[string]any{
		"viewtime": ms,
		"userid":   id,
		"pageid":   fmt.Sprintf("Page_%d", 1+r.intn(100)),
	}}
}

func (p *pageviews) firstAt(time.Time) int64 { return 0 }
