package server

// InitProducerId: versions 0-5. Without a transactional id (or with an
// empty one), an idempotent producer: a fresh producer id with epoch 0 each
// time, as Kafka does. Ids come from blocks recorded in the metadata log,
// so none is reused after a restart. With a transactional id, the id's
// transaction coordinator answers (txn.Coordinator.InitProducerID: the
// epoch bumped, a zombie fenced, an open transaction aborted) once the
// id's record is durable; NOT_COORDINATOR when this node does not
// coordinate it.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/txn"
)

// producerIDBlock is how many producer ids one metadata record reserves.
const producerIDBlock = 1000

// producerIDs hands out producer ids from a reserved block.
type producerIDs struct {
	s  *Server
	mu sync.Mutex
	// next and end bound the current block; next == end means none left.
	next, end int64
}

func (p *producerIDs) allocate(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Nodes reserve blocks concurrently: a proposal made from an image
	// another node's reservation has since passed is refused as stale,
	// and tried again from the newer image.
	for attempt := 0; p.next == p.end; attempt++ {
		start := p.s.meta.Image().NextProducerID
		err := p.s.meta.Propose(ctx, metadata.Record{AllocateProducers: &metadata.AllocateProducers{Start: start, Count: producerIDBlock}})
		switch {
		case err == nil:
			p.next, p.end = start, start+producerIDBlock
		case errors.Is(err, metadata.ErrStaleEpoch) && attempt < 10:
		default:
			return 0, fmt.Errorf("reserve producer ids: %w", err)
		}
	}
	id := p.next
	p.next++
	return id, nil
}

func handleInitProducerID(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.InitProducerIDRequest)
	fail := func(code int16) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, code
		return resp
	}
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		now := c.s.now()
		return c.s.txns.call(c, r, *req.TransactionalID, fail, func(core *txn.Coordinator, w txn.Waiter) txn.Output {
			return core.InitProducerID(now, w, req)
		})
	}
	id, err := c.s.pids.allocate(context.Background())
	if err != nil {
		return fail(c.s.metrics.code(kmsg.InitProducerID, err))
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
