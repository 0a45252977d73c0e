package loadshed_test

import (
	"context"

	"github.com/rampart-go/rampart"
)

var okService = rampart.ServiceFunc[string, string](func(context.Context, string) (string, error) { return "ok", nil })
