package controller

import (
	"fmt"
	"time"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Registration is a broker's BrokerRegistration request.
type Registration struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Incarnation identifies this run of the broker process (Kafka's
	// incarnation id): registering again with the same one is idempotent.
	Incarnation string `json:"incarnation"`
}

// RegistrationReply is the controller's answer: the broker epoch to send
// in heartbeats and AlterPartition.
type RegistrationReply struct {
	Epoch int64 `json:"epoch"`
}

// Register handles a BrokerRegistration. A new registration (a new
// broker, or a new incarnation of one) gets a broker epoch larger than
// any before it (the image's offset + 1, which only grows) and starts
// fenced; partitions the old incarnation led or was in the ISR of are
// re-elected as if it was fenced. The same incarnation registering again
// gets its epoch back and changes nothing. Another incarnation while the
// registered one is unfenced, not in controlled shutdown, not the
// controller's own node, and its session alive is
// ErrDuplicateBrokerRegistration, as in Kafka (a controller that has not
// seen the registered one yet gives it a full session first, so a broker
// restarted right after a controller failover waits for the old session
// to run out).
func (c *Controller) Register(im *metadata.Image, now time.Time, r Registration) (RegistrationReply, []metadata.Record, error) {
	if r.ID < 0 || r.Incarnation == "" || r.Port < 0 {
		return RegistrationReply{}, nil, fmt.Errorf("%w: id %d, port %d, incarnation %q", ErrInvalidRegistration, r.ID, r.Port, r.Incarnation)
	}
	old, exists := im.Brokers[r.ID]
	if exists && old.Epoch != 0 && old.Incarnation == r.Incarnation {
		return RegistrationReply{Epoch: old.Epoch}, nil, nil
	}
	// The old incarnation may be alive unless it is fenced, said it is
	// shutting down, or is this controller's own node (its predecessor:
	// the quorum runs one process per node id).
	if exists && old.Epoch != 0 && !old.Fenced && !old.InControlledShutdown && r.ID != c.cfg.NodeID {
		s, ok := c.sessions[r.ID]
		if !ok || s.epoch != old.Epoch {
			// Not seen since this controller started: a full session from
			// now, as Tick would give it.
			s = session{epoch: old.Epoch, deadline: now.Add(c.cfg.SessionTimeout)}
			c.sessions[r.ID] = s
		}
		if now.Before(s.deadline) {
			return RegistrationReply{}, nil, fmt.Errorf("%w: broker %d (incarnation %s, epoch %d) heartbeated until %s",
				ErrDuplicateBrokerRegistration, r.ID, old.Incarnation, old.Epoch, s.deadline.Sub(now))
		}
	}
	epoch := max(im.Offset+1, old.Epoch+1)
	b := &batch{im: im}
	b.add(metadata.Record{RegisterBroker: &metadata.Broker{
		ID: r.ID, Host: r.Host, Port: r.Port, Rack: r.Rack, Epoch: epoch, Incarnation: r.Incarnation, Fenced: true,
	}})
	c.reconcile(b, map[int32]bool{r.ID: true})
	c.sessions[r.ID] = session{epoch: epoch, deadline: now.Add(c.cfg.SessionTimeout)}
	return RegistrationReply{Epoch: epoch}, c.done(b), nil
}

// Heartbeat is a broker's BrokerHeartbeat request.
type Heartbeat struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
	// MetadataOffset is the offset of the last metadata record the broker
	// applied (the image's Offset).
	MetadataOffset int64 `json:"metadata_offset"`
	WantFence      bool  `json:"want_fence,omitempty"`
	WantShutdown   bool  `json:"want_shutdown,omitempty"`
}

// HeartbeatReply is the controller's answer, as the image will be once
// the returned records are applied.
type HeartbeatReply struct {
	// IsCaughtUp: the broker has applied its own registration.
	IsCaughtUp bool `json:"is_caught_up,omitempty"`
	IsFenced   bool `json:"is_fenced,omitempty"`
	// ShouldShutDown: the broker asked to shut down and leads no partition
	// any more (or is fenced): it may stop now.
	ShouldShutDown bool `json:"should_shut_down,omitempty"`
}

// Heartbeat handles a BrokerHeartbeat: it renews the broker's session,
// unfences a fenced broker once it has caught up with the metadata (its
// MetadataOffset reached its registration) and does not ask to stay
// fenced, fences one that asks to be (WantFence), and starts a controlled
// shutdown for one that asks (WantShutdown): the broker is marked in
// controlled shutdown, leadership moves to other ISR members and it
// leaves every ISR (but one where it is the last member: that partition
// goes offline, and comes back with it). The reply says when it may stop;
// then the broker is fenced, as Kafka's controller does.
// After an unfencing, partitions it can lead get a leader again.
func (c *Controller) Heartbeat(im *metadata.Image, now time.Time, h Heartbeat) (HeartbeatReply, []metadata.Record, error) {
	br, ok := im.Brokers[h.ID]
	if !ok {
		return HeartbeatReply{}, nil, fmt.Errorf("%w: broker %d", ErrBrokerNotRegistered, h.ID)
	}
	if br.Epoch != h.Epoch || br.Epoch == 0 {
		return HeartbeatReply{}, nil, fmt.Errorf("%w: broker %d sent epoch %d, registered with %d", ErrStaleBrokerEpoch, h.ID, h.Epoch, br.Epoch)
	}
	c.sessions[h.ID] = session{epoch: br.Epoch, deadline: now.Add(c.cfg.SessionTimeout)}
	caughtUp := h.MetadataOffset >= br.Epoch
	b := &batch{im: im}
	yes, no := true, false
	switch {
	case h.WantShutdown && !br.Fenced && !br.InControlledShutdown:
		b.add(metadata.Record{ChangeBroker: &metadata.ChangeBroker{ID: br.ID, Epoch: br.Epoch, InControlledShutdown: &yes}})
	case h.WantFence && !br.Fenced:
		fenceBroker(b, br)
	case !h.WantFence && !h.WantShutdown && br.Fenced && caughtUp:
		b.add(metadata.Record{ChangeBroker: &metadata.ChangeBroker{ID: br.ID, Epoch: br.Epoch, Fenced: &no}})
	}
	c.reconcile(b, map[int32]bool{h.ID: true})
	now2 := b.im.Brokers[h.ID]
	reply := HeartbeatReply{IsCaughtUp: caughtUp, IsFenced: now2.Fenced}
	if h.WantShutdown {
		reply.ShouldShutDown = now2.Fenced || !leadsAny(b.im, h.ID)
		if reply.ShouldShutDown && !now2.Fenced {
			// Kafka's SHUTDOWN_NOW: the broker is fenced as it is told to
			// stop, so clients stop being offered it at once.
			fenceBroker(b, now2)
			c.reconcile(b, map[int32]bool{h.ID: true})
			reply.IsFenced = true
		}
	}
	return reply, c.done(b), nil
}

// leadsAny reports whether broker id leads a partition in im.
func leadsAny(im *metadata.Image, id int32) bool {
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}
