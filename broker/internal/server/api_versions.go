package server

// ApiVersions: versions 0-4. v3+ carries the client's software name and
// version (KIP-511); a too-new version is answered in v0 form with
// UNSUPPORTED_VERSION (see conn.readLoop).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleApiVersions(c *conn, r *request) kmsg.Response {
	return apiVersionsResponse()
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
