package validate

import (
	"errors"
	"strings"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestGetTopologyInfoWindow(t *testing.T) {
	for _, w := range []string{"", "600", "10800", "86400", ":all-time"} {
		if err := GetTopologyInfo(&nimbusv1.GetTopologyInfoRequest{Name: "wc", Window: w}); err != nil {
			t.Errorf("window %q: %v", w, err)
		}
	}
	for _, w := range []string{"60", "all", "-600", strings.Repeat("9", 1000)} {
		err := GetTopologyInfo(&nimbusv1.GetTopologyInfoRequest{Name: "wc", Window: w})
		var ve *Error
		if !errors.As(err, &ve) || ve.Field != "window" || len(err.Error()) > 200 {
			t.Errorf("window %.20q: %v, want an error naming window, its value cut", w, err)
		}
	}
}
