package server

// IncrementalAlterConfigs: versions 0-1. Operations SET, DELETE, APPEND and
// SUBTRACT (the last two for list-typed configs) on topic and broker
// resources; validate_only.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/configs"
)

func handleIncrementalAlterConfigs(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		resType := int8(rr.ResourceType)
		err := c.s.alterConfigs(resType, rr.ResourceName, func(cur map[string]string) (map[string]string, error) {
			if cur == nil {
				cur = map[string]string{}
			}
			for _, op := range rr.Configs {
				if err := applyConfigOp(cur, resType, op); err != nil {
					return nil, err
				}
			}
			return cur, nil
		}, req.ValidateOnly)
		if err != nil {
			sr.ErrorCode = c.s.metrics.code(kmsg.IncrementalAlterConfigs, err)
			sr.ErrorMessage = errMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func applyConfigOp(cur map[string]string, resType int8, op kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	value := ""
	if op.Value != nil {
		value = *op.Value
	}
	switch op.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		cur[op.Name] = value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(cur, op.Name)
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		d, ok := configs.TopicDef(op.Name)
		if resType == resourceBroker {
			d, ok = configs.BrokerDef(op.Name)
		}
		if !ok {
			return fmt.Errorf("%w: unknown config %q", configs.ErrUnknownConfig, op.Name)
		}
		if d.Type != kmsg.ConfigTypeList {
			return kafkaErr(kerr.InvalidConfig, "%s is not a list, so it cannot be appended to or subtracted from", op.Name)
		}
		// Like Kafka, start from the default when the key is not set.
		v, set := cur[op.Name]
		if !set {
			v = d.Default
		}
		list := splitList(v)
		for _, v := range splitList(value) {
			if op.Op == kmsg.IncrementalAlterConfigOpAppend {
				if !slices.Contains(list, v) {
					list = append(list, v)
				}
			} else {
				list = slices.DeleteFunc(list, func(x string) bool { return x == v })
			}
		}
		cur[op.Name] = strings.Join(list, ",")
	default:
		return kafkaErr(kerr.InvalidRequest, "unknown operation %d for %s", op.Op, op.Name)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
