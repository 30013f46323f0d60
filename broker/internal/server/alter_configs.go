package server

// AlterConfigs: versions 0-2. Replaces a resource's whole set of dynamic
// configs (keys not named are removed), for topics and for brokers ("" is the
// cluster-wide default, or this node's id); validate_only. Broker keys must
// be dynamic ones.

import (
	"context"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/metadata"
)

func handleAlterConfigs(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		want := map[string]string{}
		for _, kv := range rr.Configs {
			if kv.Value != nil {
				want[kv.Name] = *kv.Value
			}
		}
		err := c.s.alterConfigs(int8(rr.ResourceType), rr.ResourceName, func(map[string]string) (map[string]string, error) {
			return want, nil
		}, req.ValidateOnly)
		if err != nil {
			sr.ErrorCode = c.s.metrics.code(kmsg.AlterConfigs, err)
			sr.ErrorMessage = errMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// alterConfigs changes one resource's dynamic configs to what change returns
// given the current ones, after validating the result.
func (s *Server) alterConfigs(resType int8, name string, change func(cur map[string]string) (map[string]string, error), validateOnly bool) error {
	im := s.meta.Image()
	var cur map[string]string
	switch resType {
	case resourceTopic:
		t := im.Topic(name)
		if t == nil {
			return kafkaErr(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
		}
		cur = t.Configs
	case resourceBroker:
		if name != "" && name != strconv.Itoa(int(s.cfg.NodeID)) {
			return kafkaErr(kerr.InvalidRequest, "broker %q is not this node (%d)", name, s.cfg.NodeID)
		}
		cur = im.BrokerConfigs[name]
	default:
		return kafkaErr(kerr.InvalidRequest, "resource type %d is not supported", resType)
	}
	want, err := change(maps.Clone(cur))
	if err != nil {
		return err
	}
	if resType == resourceTopic {
		if want, err = configs.NormalizeTopicConfigs(want); err != nil {
			return err
		}
		if _, err := configs.ResolveTopic(want, s.layers(im)); err != nil {
			return err
		}
	} else {
		if want, err = configs.NormalizeDynamicBrokerConfigs(want); err != nil {
			return err
		}
		layers := s.layers(im)
		if name == "" {
			layers.DynamicDefault = want
		} else {
			layers.Dynamic = want
		}
		if _, err := configs.ResolveBroker(layers); err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	var recs []metadata.Record
	for k, v := range want {
		if old, ok := cur[k]; ok && old == v {
			continue
		}
		set := &metadata.SetConfig{Name: name, Key: k, Value: &v}
		recs = append(recs, configRecord(resType, set))
	}
	for k := range cur {
		if _, ok := want[k]; !ok {
			recs = append(recs, configRecord(resType, &metadata.SetConfig{Name: name, Key: k}))
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return s.meta.Propose(context.Background(), recs...)
}

func configRecord(resType int8, c *metadata.SetConfig) metadata.Record {
	if resType == resourceTopic {
		return metadata.Record{SetTopicConfig: c}
	}
	return metadata.Record{SetBrokerConfig: c}
}
