package streams

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// isFenced reports an error after which an exactly-once instance's
// producer can do nothing more: another producer with its transactional id
// took over (a zombie fenced by its restarted self), or the coordinator
// aborted a transaction that outlived its timeout and bumped the epoch.
// Kafka Streams treats these as "task migrated": it drops its uncommitted
// work and rejoins, and so does an App (rejoinFenced).
func isFenced(err error) bool {
	return errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

// maxFencedInARow bounds rejoins after fencing with no commit between
// them: a producer fenced again and again has a twin instance (two
// instances sharing a state directory's instance id), which is a setup
// error to report, not to fight.
const maxFencedInARow = 5

// rejoinFenced drops everything the instance did since its last commit,
// closes its group client (leaving the group, which moves its tasks
// elsewhere for a moment) and starts a new one with the same transactional
// id, whose InitProducerID bumps the epoch past the fence. The tasks come
// back through the group and restore from their changelogs (local state is
// at its last commit, so only the tail is read).
func (r *run) rejoinFenced(cause error) error {
	r.fencedInARow++
	if r.fencedInARow > maxFencedInARow {
		return fmt.Errorf("streams: producer fenced %d times in a row (does another instance use this state directory's instance id?): %w", r.fencedInARow, cause)
	}
	r.app.log.Warn("producer fenced; dropping uncommitted work and rejoining the group", "err", cause)
	r.app.metrics.fenced.Inc()
	r.mu.Lock()
	err := r.dropUncommittedLocked()
	r.out.Lock()
	r.out.err = nil // the fenced producer's; the new one starts clean
	r.out.Unlock()
	clear(r.mu.pending)
	r.mu.inTxn = false
	r.mu.fatal = nil
	r.mu.Unlock()
	if err != nil {
		return err
	}
	// The rebalance callbacks take r.mu: close without holding it.
	r.sess.CloseAllowingRebalance()
	sess, err := kgo.NewGroupTransactSession(r.sessOpts...)
	if err != nil {
		return fmt.Errorf("streams: client after fencing: %w", err)
	}
	r.mu.Lock()
	r.sess, r.cl = sess, sess.Client()
	r.mu.Unlock()
	return nil // a ctx ended meanwhile is seen by the loop's next poll: a stop
}
