package server

// ApiVersions: versions 0-4. v3+ carries the client's software name and
// version (KIP-511); a too-new version is answered in v0 form with
// UNSUPPORTED_VERSION (see conn.readLoop).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// softwareField is what KIP-511 allows in the client software name and
// version.
var softwareField = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ApiVersionsRequest)
	resp := apiVersionsResponse()
	if req.Version >= 3 && (!softwareField.MatchString(req.ClientSoftwareName) || !softwareField.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	return resp
}

func apiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		h, ok := lookupHandler(key)
		if !ok {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, h.min, h.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
