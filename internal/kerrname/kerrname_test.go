package kerrname

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRoundTrip(t *testing.T) {
	if Of(0) != "NONE" {
		t.Fatalf("Of(0) = %q", Of(0))
	}
	for _, e := range []*kerr.Error{kerr.NotCoordinator, kerr.ProducerFenced, kerr.UnknownTopicOrPartition} {
		if got := Lookup(Of(e.Code)); got != e {
			t.Errorf("Lookup(Of(%d)) = %v, want %v", e.Code, got, e)
		}
	}
	if Lookup("NO_SUCH_ERROR") != nil {
		t.Fatal("an unknown name was found")
	}
}
