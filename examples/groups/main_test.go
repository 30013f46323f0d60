package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	joinRE  = regexp.MustCompile(`^group (\w+): (\w+) joins -> (.*)$`)
	ownsRE  = regexp.MustCompile(`(\w+) owns \[([\d ]*)\]`)
	readRE  = regexp.MustCompile(`^group (\w+): (\w+) read (\d+) records \((.*)\)$`)
	countRE = regexp.MustCompile(`^p(\d+): (\d+)$`)
)

// parseOwners reads "A1 owns [0 1], A2 owns [2 3]".
func parseOwners(t *testing.T, s string) map[string][]int {
	t.Helper()
	owners := map[string][]int{}
	for _, m := range ownsRE.FindAllStringSubmatch(s, -1) {
		owners[m[1]] = []int{}
		for _, f := range strings.Fields(m[2]) {
			p, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			owners[m[1]] = append(owners[m[1]], p)
		}
	}
	return owners
}

// TestGroups runs the example against its embedded broker and checks the
// picture it prints: within a group the members split the partitions
// (two each in A, one each in B) and read only their own; each group
// reads every record once.
func TestGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 20
	var out strings.Builder
	if err := run(ctx, "", n, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())

	joins := map[string]int{}              // group -> members joined
	final := map[string]map[string][]int{} // group -> member -> partitions, after the last join
	read := map[string]map[int]int{}       // member -> partition -> records
	readTotal := map[string]int{}          // member -> records
	memberGroup := map[string]string{}     // member -> group
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimSpace(line)
		if m := joinRE.FindStringSubmatch(line); m != nil {
			group, joiner := m[1], m[2]
			joins[group]++
			if want := fmt.Sprintf("%s%d", group, joins[group]); joiner != want {
				t.Errorf("join %d of group %s is %s's, want %s's", joins[group], group, joiner, want)
			}
			owners := parseOwners(t, m[3])
			if len(owners) != joins[group] {
				t.Errorf("after %s joined, group %s lists %d members: %s", joiner, group, len(owners), line)
			}
			checkSplit(t, line, owners)
			final[group] = owners
		}
		if m := readRE.FindStringSubmatch(line); m != nil {
			member := m[2]
			memberGroup[member] = m[1]
			readTotal[member], _ = strconv.Atoi(m[3])
			read[member] = map[int]int{}
			for _, f := range strings.Split(m[4], ", ") {
				c := countRE.FindStringSubmatch(f)
				if c == nil {
					t.Fatalf("cannot read %q in %q", f, line)
				}
				p, _ := strconv.Atoi(c[1])
				read[member][p], _ = strconv.Atoi(c[2])
			}
		}
		if strings.Contains(line, "rebalance:") {
			t.Errorf("a group rebalanced while reading: %s", line)
		}
	}

	perPartition := n / partitions
	for _, g := range groups {
		if joins[g.name] != g.members {
			t.Errorf("group %s: %d joins printed, want %d", g.name, joins[g.name], g.members)
		}
		for member, ps := range final[g.name] {
			// Members split the partitions evenly, and each read exactly
			// the records of the partitions it owns.
			if len(ps) != partitions/g.members {
				t.Errorf("group %s: %s owns %v, want %d partitions", g.name, member, ps, partitions/g.members)
			}
			if memberGroup[member] != g.name {
				t.Errorf("%s: no read count printed for group %s", member, g.name)
			}
			if readTotal[member] != len(ps)*perPartition {
				t.Errorf("%s read %d records, want %d (%d partitions of %d)", member, readTotal[member], len(ps)*perPartition, len(ps), perPartition)
			}
			for _, p := range ps {
				if read[member][p] != perPartition {
					t.Errorf("%s read %d records of partition %d, want %d", member, read[member][p], p, perPartition)
				}
			}
			if len(read[member]) != len(ps) {
				t.Errorf("%s read partitions %v, owns %v", member, read[member], ps)
			}
		}
		want := fmt.Sprintf("group %s read %d records, %d distinct, of %d produced", g.name, n, n, n)
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// checkSplit checks that the members of one group own each partition
// exactly once, and each at least one.
func checkSplit(t *testing.T, line string, owners map[string][]int) {
	t.Helper()
	var all []int
	for member, ps := range owners {
		if len(ps) == 0 {
			t.Errorf("%s owns no partition: %s", member, line)
		}
		all = append(all, ps...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []int{0, 1, 2, 3}) {
		t.Errorf("the members own partitions %v, want each of 0-3 once: %s", all, line)
	}
}
