package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/quorum"
)

// startTimeout bounds how long New waits for the metadata quorum: in a
// cluster, for a majority of controller.quorum.voters to be up and elect a
// leader.
const startTimeout = 2 * time.Minute

// openQuorum opens this node's member of the metadata quorum in
// <log.dirs>/__cluster_metadata (real files: raft's stores do not use
// vfs.FS). A data directory written before the quorum existed (a
// __meta/journal and no __cluster_metadata) is migrated once: its image is
// proposed as records and __meta is renamed to __meta.migrated.
func (s *Server) openQuorum(o Options) (*quorum.Quorum, error) {
	dir := filepath.Join(s.dataDir, quorum.DirName)
	journalDir := filepath.Join(s.dataDir, "__meta")
	_, statErr := os.Stat(dir)
	fresh := errors.Is(statErr, os.ErrNotExist)
	q, err := quorum.Open(quorum.Config{
		NodeID:           s.cfg.NodeID,
		Voters:           s.cfg.ControllerQuorumVoters,
		Dir:              dir,
		Listener:         o.ControllerListener,
		ElectionTimeout:  time.Duration(s.cfg.ControllerQuorumElectionTimeoutMs) * time.Millisecond,
		HeartbeatTimeout: time.Duration(s.cfg.ControllerQuorumFetchTimeoutMs) * time.Millisecond,
		Logger:           s.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("server: metadata quorum: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := q.Sync(ctx); err != nil {
		q.Close()
		return nil, fmt.Errorf("server: waiting for the metadata quorum (controller.quorum.voters %v): %w", s.cfg.ControllerQuorumVoters, err)
	}
	if _, err := os.Stat(filepath.Join(journalDir, "journal")); fresh && err == nil {
		if err := s.migrateJournal(ctx, q, journalDir); err != nil {
			q.Close()
			return nil, err
		}
	}
	return q, nil
}

// migrateJournal proposes the image of the single-node journal that
// preceded the quorum, then renames the journal's directory so it is not
// read again.
func (s *Server) migrateJournal(ctx context.Context, q *quorum.Quorum, dir string) error {
	st, err := metadata.Open(s.fs, dir, s.logger)
	if err != nil {
		return fmt.Errorf("server: migrate metadata journal: %w", err)
	}
	im := st.Image()
	if err := st.Close(); err != nil {
		return fmt.Errorf("server: migrate metadata journal: %w", err)
	}
	if err := q.Propose(ctx, metadata.RecordsOf(im)...); err != nil {
		return fmt.Errorf("server: migrate metadata journal: %w", err)
	}
	if err := os.Rename(dir, dir+".migrated"); err != nil {
		return fmt.Errorf("server: migrate metadata journal: %w", err)
	}
	s.logger.Info("migrated the metadata journal into the quorum", "topics", len(im.Topics), "old", dir+".migrated")
	return nil
}
