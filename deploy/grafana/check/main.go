// Checks a Grafana dashboard against Grafana's own dashboard schema, as the Grafana
// Foundation SDK generates it from Grafana's schema definitions: every field known, of its
// type, every required field present, each panel's options and field config those of its
// panel plugin. No Grafana server is needed (none can be installed here); this is what
// Grafana would reject or silently drop on import.
//
//	go run ./deploy/grafana/check deploy/grafana/sluice-dashboard.json
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: check DASHBOARD.json")
		os.Exit(2)
	}
	if err := check(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func check(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	// What Grafana's import form reads (the datasource to ask for) and does not keep.
	for _, k := range []string{"__inputs", "__requires", "__elements"} {
		delete(doc, k)
	}
	model, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	plugins.RegisterDefaultPlugins()
	var board dashboard.Dashboard
	err = board.UnmarshalJSONStrict(model)
	// The SDK answers an empty (typed) error list when all is well.
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		err = nil
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s: matches Grafana's dashboard schema (%d panels at the top level)\n", path, len(board.Panels))
	return nil
}
