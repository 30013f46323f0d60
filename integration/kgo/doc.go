// Package kgo runs franz-go's own integration suite (the broker-facing tests
// of github.com/twmb/franz-go/pkg/kgo, which ship in the module cache) against
// a broker started by this package's test.
//
// The suite's tests find their broker through KGO_SEEDS and create topics with
// replication factor KGO_TEST_RF. The runner (suite_test.go) passes both and
// runs an explicit allow-list of test names; the deny-list beside it names the
// broker-facing tests that are left out, each with the reason. Move a test from
// deny to allow when the broker grows the feature it needs. Both lists are
// checked against `go test -list` of the suite, so an upgrade of franz-go that
// renames or drops a test fails here instead of silently shrinking coverage.
// The suite's other tests are client unit tests that need no broker.
//
// TestFranzGoSuite runs the allow-list against one node with KGO_TEST_RF=1;
// TestFranzGoSuiteCluster runs it against a three-node cluster (every node a
// seed, internal and default replication factor 3) with KGO_TEST_RF=3, less
// the tests clusterExcluded names with the cluster gap each one waits for.
// KGO_SUITE_RUN, a regular expression, narrows both runs to the allow-listed
// tests it matches: with -v (broker logs) and KGO_LOG_LEVEL=debug (client
// logs, printed for failing tests) it is how one failure is looked into.
//
// Built with `-tags kfake`, the runner points the suite at franz-go's kfake
// instead of Runnel (kfake_ref_test.go): a reference for telling a broker bug
// from a test that cannot pass anywhere.
package kgo
