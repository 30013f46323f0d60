package server

// InitProducerId: versions 0-5, for idempotent producers: a fresh producer
// id with epoch 0 each time (as Kafka does without a transactional id).
// Ids come from blocks recorded in the metadata log, so none is reused after
// a restart. A transactional id is refused until transactions land.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/metadata"
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
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		c.s.logger.Info("refusing a transactional producer: transactions are not supported yet", "transactional_id", *req.TransactionalID)
		return resp
	}
	id, err := c.s.pids.allocate(context.Background())
	if err != nil {
		resp.ErrorCode = c.s.metrics.code(kmsg.InitProducerID, err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
