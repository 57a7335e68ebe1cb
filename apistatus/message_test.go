package apistatus

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/validate"
)

func TestMessageIsPlainWords(t *testing.T) {
	denied := status.Error(codes.PermissionDenied, "nimbus: permission denied: alice may not kill wordcount")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"status", denied, "permission denied: alice may not kill wordcount"},
		{"wrapped status", fmt.Errorf("kill wordcount: %w", denied), "kill wordcount: permission denied: alice may not kill wordcount"},
		{"empty message", status.Error(codes.PermissionDenied, ""), "permission denied"},
		{"field named", ToStatus(validate.Invalid("numWorkers", "must be at least 1")), "numWorkers: must be at least 1"},
		{"domain error", fmt.Errorf("%w: no topology has id \"x\"", apierr.ErrNotFound), apierr.ErrNotFound.Error() + ": no topology has id \"x\""},
		{"plain", errors.New("boom"), "boom"},
	} {
		got := Message(tc.err)
		if got != tc.want {
			t.Errorf("%s: Message = %q, want %q", tc.name, got, tc.want)
		}
	}
}
