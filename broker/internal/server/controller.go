package server

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/controller"
	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/quorum"
)

// controllerTick is how often the active controller checks sessions,
// elections and leader balance.
const controllerTick = 250 * time.Millisecond

// activeController is the IO shell around controller.Controller while this
// node leads the quorum: one owner goroutine serializes the brokers' calls
// (which arrive through quorum.HandleCalls) and the ticks, proposes each
// step's records as one entry, and answers a call once its records are
// applied. Every step reads the quorum's image after the previous step's
// proposal returned, so no decision is made on state the controller
// already changed.
type activeController struct {
	s     *Server
	calls chan ctrlCall
	stop  chan struct{}
	done  chan struct{}
}

type ctrlCall struct {
	req   controller.Request
	reply chan controller.Response
}

// onLeadership starts the active controller when this node becomes the
// quorum leader and stops it when that ends. It runs on the quorum's
// notifier and returns at once.
func (s *Server) onLeadership(leader bool) {
	s.ctrlMu.Lock()
	defer s.ctrlMu.Unlock()
	if s.ctrl != nil {
		s.meta.HandleCalls(nil)
		close(s.ctrl.stop)
		s.ctrl = nil
	}
	s.metrics.controllerActive.Set(0)
	if !leader || s.ctrlClosed {
		return
	}
	ac := &activeController{s: s, calls: make(chan ctrlCall), stop: make(chan struct{}), done: make(chan struct{})}
	s.ctrl = ac
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ac.run()
	}()
}

// stopController stops the active controller for good (Close).
func (s *Server) stopController() {
	s.ctrlMu.Lock()
	ac := s.ctrl
	s.ctrlClosed = true
	s.ctrl = nil
	s.ctrlMu.Unlock()
	if ac != nil {
		s.meta.HandleCalls(nil)
		close(ac.stop)
		<-ac.done
	}
}

func (ac *activeController) run() {
	defer close(ac.done)
	s := ac.s
	ctx, cancel := context.WithCancel(s.bg)
	defer cancel()
	go func() {
		select {
		case <-ac.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// A new leader first applies everything committed before it.
	if err := s.meta.Sync(ctx); err != nil {
		s.logger.Info("controller: not starting, the quorum leadership ended", "err", err)
		return
	}
	c := controller.New(controller.Config{
		NodeID:                       s.cfg.NodeID,
		SessionTimeout:               time.Duration(s.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		UncleanLeaderElection:        s.static["unclean.leader.election.enable"] == "true",
		AutoLeaderRebalance:          s.cfg.AutoLeaderRebalanceEnable,
		LeaderImbalancePercentage:    s.cfg.LeaderImbalancePerBrokerPercentage,
		LeaderImbalanceCheckInterval: time.Duration(s.cfg.LeaderImbalanceCheckIntervalSecs) * time.Second,
	})
	// Install the handler only while this is still the current
	// controller: leadership may have ended during the Sync, and then
	// onLeadership has removed the handler already.
	s.ctrlMu.Lock()
	if s.ctrl != ac {
		s.ctrlMu.Unlock()
		return
	}
	s.meta.HandleCalls(ac.handle)
	s.metrics.controllerActive.Set(1)
	s.ctrlMu.Unlock()
	s.logger.Info("controller: active", "node", s.cfg.NodeID)
	tick := time.NewTicker(controllerTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case call := <-ac.calls:
			call.reply <- ac.step(ctx, c, call.req)
		case <-tick.C:
			if recs := c.Tick(s.meta.Image(), s.now()); len(recs) > 0 {
				ac.propose(ctx, recs)
			}
		}
	}
}

// handle is the quorum's call handler: it passes the request to the owner
// and waits for its answer.
func (ac *activeController) handle(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := controller.DecodeRequest(payload)
	if err != nil {
		return controller.ResponseFor(nil, err).Encode(), nil
	}
	call := ctrlCall{req: req, reply: make(chan controller.Response, 1)}
	select {
	case ac.calls <- call:
	case <-ac.stop:
		return nil, errors.New("controller: stopped")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case resp := <-call.reply:
		return resp.Encode(), nil
	case <-ac.done:
		return nil, errors.New("controller: stopped")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// step runs one call on the core, proposes its records, and returns the
// answer once they are applied (or the refusal, or why they were not).
func (ac *activeController) step(ctx context.Context, c *controller.Controller, req controller.Request) controller.Response {
	im, now := ac.s.meta.Image(), ac.s.now()
	var reply any
	var recs []metadata.Record
	var err error
	switch {
	case req.Register != nil:
		reply, recs, err = c.Register(im, now, *req.Register)
	case req.Heartbeat != nil:
		reply, recs, err = c.Heartbeat(im, now, *req.Heartbeat)
	case req.Elect != nil:
		reply, recs = controller.Elect(im, *req.Elect)
	case req.Reassign != nil:
		reply, recs = controller.Reassign(im, *req.Reassign)
	case req.AlterPartition != nil:
		var st metadata.Partition
		var rec *metadata.Record
		st, rec, err = controller.AlterPartition(im, *req.AlterPartition)
		reply = st
		if rec != nil {
			recs = []metadata.Record{*rec}
		}
	}
	if err == nil && len(recs) > 0 {
		err = ac.propose(ctx, recs)
	}
	return controller.ResponseFor(reply, err)
}

// propose commits recs as one entry. A refusal because the image moved on
// (a stale epoch) is logged: the next tick or the broker's retry decides
// again on the newer image.
func (ac *activeController) propose(ctx context.Context, recs []metadata.Record) error {
	err := ac.s.meta.Propose(ctx, recs...)
	if err != nil {
		ac.s.logger.Warn("controller: proposal not applied", "records", len(recs), "err", err)
		if errors.Is(err, metadata.ErrStaleEpoch) || errors.Is(err, quorum.ErrLeadershipLost) || errors.Is(err, quorum.ErrNotCommitted) {
			return kafkaErr(kerr.NotController, "controller: proposal not applied: %v", err)
		}
	}
	return err
}
