package server

// DescribeConfigs: versions 1-4 (1 is Kafka 4.0's floor). Topic and broker
// resources (broker "" is the cluster-wide dynamic default); config names
// filter, synonyms and documentation on request. Broker loggers are not
// supported.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/configs"
)

// Kafka's config resource types.
const (
	resourceTopic  = 2
	resourceBroker = 4
)

func handleDescribeConfigs(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	s := c.s
	im := s.meta.Image()
	layers := s.layers(im)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []configs.Entry
		var err error
		switch rr.ResourceType {
		case resourceTopic:
			if t := im.Topic(rr.ResourceName); t == nil {
				err = kafkaErr(kerr.UnknownTopicOrPartition, "topic %q does not exist", rr.ResourceName)
			} else {
				entries = configs.DescribeTopic(t.Configs, layers)
			}
		case resourceBroker:
			switch rr.ResourceName {
			case "":
				entries = configs.DescribeBrokerDefaults(layers)
			case strconv.Itoa(int(s.cfg.NodeID)):
				entries = configs.DescribeBroker(layers)
			default:
				err = kafkaErr(kerr.InvalidRequest, "broker %q is not this node (%d)", rr.ResourceName, s.cfg.NodeID)
			}
		default:
			err = kafkaErr(kerr.InvalidRequest, "resource type %d is not supported", rr.ResourceType)
		}
		if err != nil {
			sr.ErrorCode = s.metrics.code(kmsg.DescribeConfigs, err)
			sr.ErrorMessage = errMessage(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value, rc.ReadOnly, rc.Source, rc.IsSensitive = e.Name, e.Value, e.ReadOnly, e.Source, e.Sensitive
			rc.ConfigType = e.Type
			if req.IncludeDocumentation {
				doc := e.Doc
				rc.Documentation = &doc
			}
			if req.IncludeSynonyms {
				for _, syn := range e.Synonyms {
					rs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					rs.Name, rs.Value, rs.Source = syn.Name, syn.Value, syn.Source
					rc.ConfigSynonyms = append(rc.ConfigSynonyms, rs)
				}
			}
			sr.Configs = append(sr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}
