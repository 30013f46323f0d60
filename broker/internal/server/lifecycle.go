package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/broker/internal/controller"
)

// The broker's side of KRaft's broker lifecycle: it registers with the
// active controller (a broker epoch for this incarnation; it starts
// fenced), heartbeats until the controller unfences it (it has applied
// its own registration), then heartbeats every broker.heartbeat.interval.ms
// so its session stays alive, and on Close asks for a controlled shutdown
// (leadership moves away) before it stops. The active controller may be
// this node or another; the calls go through quorum.CallLeader.

// lifecycle is this node's registration.
type lifecycle struct {
	incarnation string
	epoch       atomic.Int64 // 0 until registered
}

// callController sends req to the active controller and returns its
// answer, or the refusal as the controller's sentinel.
func (s *Server) callController(ctx context.Context, req controller.Request) (controller.Response, error) {
	b, err := s.meta.CallLeader(ctx, req.Encode())
	if err != nil {
		return controller.Response{}, err
	}
	resp, err := controller.DecodeResponse(b)
	if err != nil {
		return controller.Response{}, err
	}
	return resp, resp.Err()
}

// register registers this incarnation, waiting while the controller says
// an earlier incarnation's session is still alive (a broker restarted
// before its old session ran out).
func (s *Server) register(ctx context.Context) error {
	req := controller.Request{Register: &controller.Registration{
		ID: s.cfg.NodeID, Host: s.advertise.Host, Port: s.advertise.Port, Rack: s.advertise.Rack,
		Incarnation: s.life.incarnation,
	}}
	told := false
	for {
		resp, err := s.callController(ctx, req)
		if err == nil {
			s.life.epoch.Store(resp.Register.Epoch)
			return nil
		}
		if transientCall(ctx, err) {
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return fmt.Errorf("server: register with the controller: %w", err)
			}
			continue
		}
		if !errors.Is(err, controller.ErrDuplicateBrokerRegistration) {
			return fmt.Errorf("server: register with the controller: %w", err)
		}
		if !told {
			s.logger.Warn("an earlier run of this node still holds its registration; waiting for its session to end (broker.session.timeout.ms)", "err", err)
			told = true
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("server: register with the controller: %w", err)
		}
	}
}

// heartbeat sends one heartbeat with this node's metadata offset.
func (s *Server) heartbeat(ctx context.Context, wantShutdown bool) (controller.HeartbeatReply, error) {
	resp, err := s.callController(ctx, controller.Request{Heartbeat: &controller.Heartbeat{
		ID: s.cfg.NodeID, Epoch: s.life.epoch.Load(), MetadataOffset: s.meta.Image().Offset, WantShutdown: wantShutdown,
	}})
	if err != nil {
		return controller.HeartbeatReply{}, err
	}
	return *resp.Heartbeat, nil
}

// awaitUnfenced heartbeats until the controller unfences this node, then
// waits until the node's own image shows it (and the leaders the
// controller elected with it).
func (s *Server) awaitUnfenced(ctx context.Context) error {
	for {
		r, err := s.heartbeat(ctx, false)
		if err != nil && transientCall(ctx, err) {
			// The controller moved (its proposal was lost with its
			// leadership): ask the next one.
			if perr := pause(ctx, 50*time.Millisecond); perr != nil {
				return fmt.Errorf("server: heartbeat: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("server: heartbeat: %w", err)
		}
		if !r.IsFenced {
			return s.meta.Sync(ctx)
		}
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("server: waiting to be unfenced: %w", err)
		}
	}
}

// heartbeatLoop keeps this node's session alive until stop closes. A
// heartbeat the controller refuses for a stale epoch (the node was
// fenced and re-registered elsewhere, or the controller lost its
// registration) registers again.
func (s *Server) heartbeatLoop() {
	interval := time.Duration(s.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.bg, max(interval, time.Second))
		_, err := s.heartbeat(ctx, false)
		if errors.Is(err, controller.ErrStaleBrokerEpoch) || errors.Is(err, controller.ErrBrokerNotRegistered) {
			// The same incarnation: this is the same run of the node,
			// and the other nodes know it by it (interbroker.go).
			s.logger.Warn("the controller does not know this registration; registering again", "err", err)
			err = s.register(ctx)
		}
		cancel()
		if err != nil && s.bg.Err() == nil {
			s.logger.Warn("heartbeat to the controller failed", "err", err)
		}
	}
}

// controlledShutdown asks the controller to move leadership away from
// this node and waits until it says the node may stop (it leads nothing
// any more), bounded by ctx.
func (s *Server) controlledShutdown(ctx context.Context) error {
	for {
		r, err := s.heartbeat(ctx, true)
		if err == nil && r.ShouldShutDown {
			return nil
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("server: controlled shutdown: %w", err)
		}
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// transientCall reports whether a controller call failed for want of a
// controller (no quorum leader yet, a leadership change losing the call's
// proposal) rather than by the controller's refusal: such a call is tried
// again while the node starts.
func transientCall(ctx context.Context, err error) bool {
	var refusal *controller.Error
	return !errors.As(err, &refusal) && ctx.Err() == nil
}
