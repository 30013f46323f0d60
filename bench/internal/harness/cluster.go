package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// clusterStartTries is how many fresh sets of controller ports
// StartCluster tries when a node could not bind its port (another process
// took it between picking and binding).
const clusterStartTries = 3

// Cluster is n `runnel broker` processes on loopback that form one
// cluster: each node a voter of the controller quorum, with Runnel's
// default settings otherwise.
type Cluster struct {
	Nodes []*Process
}

// StartCluster starts n `bin broker` processes with node.id 1..n, data in
// dir/node-N, a free loopback Kafka port each, no HTTP listener and
// warnings-only logs; flags (as --name=value) are added to every node. The
// nodes start together (each waits for a quorum before it listens), and
// StartCluster returns once the cluster's metadata lists all n brokers.
func StartCluster(ctx context.Context, bin, dir string, n int, flags ...string) (*Cluster, error) {
	for try := 1; ; try++ {
		c, err := startCluster(ctx, bin, dir, n, try, flags)
		if err == nil {
			return c, nil
		}
		if !strings.Contains(err.Error(), "address already in use") || try == clusterStartTries {
			return nil, err
		}
	}
}

func startCluster(ctx context.Context, bin, dir string, n, try int, flags []string) (*Cluster, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, p))
	}
	c := &Cluster{Nodes: make([]*Process, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		args := append([]string{"broker",
			"--node.id", strconv.Itoa(i + 1),
			"--controller.quorum.voters", strings.Join(voters, ","),
			"--log.dirs", filepath.Join(dir, fmt.Sprintf("try-%d-node-%d", try, i+1)),
			"--listeners", "PLAINTEXT://127.0.0.1:0",
			"--runnel.http.listener", "",
			"--log-level", "warn",
		}, flags...)
		wg.Go(func() {
			c.Nodes[i], errs[i] = startBroker(ctx, "runnel broker", exec.Command(bin, args...))
			if errs[i] != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+1, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.kill()
		return nil, err
	}
	if err := c.waitBrokers(ctx, n); err != nil {
		c.kill()
		return nil, err
	}
	return c, nil
}

// freePorts returns n loopback addresses that were free a moment ago.
func freePorts(n int) ([]string, error) {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close() // all held until every one is picked: no repeats
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// waitBrokers waits up to a minute until Metadata lists n brokers.
func (c *Cluster) waitBrokers(ctx context.Context, n int) error {
	cl, err := NewClient(c.Seeds(), nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		m, err := adm.BrokerMetadata(ctx)
		if err == nil && len(m.Brokers) == n {
			return nil
		}
		if herr := c.Health(); herr != nil {
			return herr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster of %d: metadata does not list every broker within a minute (last: %d brokers, %v)", n, len(m.Brokers), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Seeds returns every node's Kafka address.
func (c *Cluster) Seeds() []string {
	var s []string
	for _, p := range c.Nodes {
		if p != nil {
			s = append(s, p.Addr)
		}
	}
	return s
}

// PIDs returns every node's process id.
func (c *Cluster) PIDs() []int {
	var s []int
	for _, p := range c.Nodes {
		s = append(s, p.PID())
	}
	return s
}

// Health returns an error once any node has exited without Stop.
func (c *Cluster) Health() error {
	var errs []error
	for _, p := range c.Nodes {
		if p != nil {
			errs = append(errs, p.Health())
		}
	}
	return errors.Join(errs...)
}

// Stop stops every node at once (SIGTERM, see Process.Stop) and waits for
// them; an error names each node that did not exit cleanly.
func (c *Cluster) Stop() error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, p := range c.Nodes {
		wg.Go(func() {
			if err := p.Stop(); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+1, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// kill kills the nodes that started, after a failed start.
func (c *Cluster) kill() {
	for _, p := range c.Nodes {
		if p != nil {
			p.kill()
		}
	}
}
