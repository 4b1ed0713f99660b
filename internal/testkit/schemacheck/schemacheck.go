// Package schemacheck validates JSON documents against summary.json's JSON
// Schema (docs/summary.schema.json), for the tests of every package that
// writes or reads one.
package schemacheck

import (
	"bytes"
	"fmt"
	"os"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled JSON Schema.
type Schema struct{ s *jsonschema.Schema }

// Load compiles the schema at path, asserting formats (date-time and the
// like) as the documentation promises.
func Load(path string) (*Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("summary.schema.json", doc); err != nil {
		return nil, err
	}
	s, err := c.Compile("summary.schema.json")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Schema{s}, nil
}

// Validate returns why data does not follow the schema, or nil.
func (s *Schema) Validate(data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.s.Validate(inst)
}
