package daemonclient

import (
	"reflect"
	"testing"

	"github.com/kandev/kandev/core/wire"
)

// Every row of the operation table is a method of the client, named as
// the row says: a row added without its method fails here.
func TestEveryOperationIsAMethod(t *testing.T) {
	typ := reflect.TypeOf((*Client)(nil))
	for _, row := range wire.Ops() {
		if _, ok := typ.MethodByName(row.Name); !ok {
			t.Errorf("operation %s (%s %s) has no method on *Client", row.Name, row.Method, row.Path)
		}
	}
}
