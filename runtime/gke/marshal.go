package gke

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Marshal writes objects as one YAML stream, documents separated by "---",
// ready for kubectl apply -f. Each object must say its apiVersion and kind
// (the constructors of this package set them). An empty status (a Job's
// "status: {}", a Service's "status: {loadBalancer: {}}"), and the empty
// metadata of a pod template, are left out.
func Marshal(objs ...runtime.Object) ([]byte, error) {
	if len(objs) == 0 {
		return nil, errors.New("no objects to marshal")
	}
	var buf bytes.Buffer
	for i, obj := range objs {
		if obj == nil {
			return nil, fmt.Errorf("object %d is nil", i)
		}
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return nil, fmt.Errorf("object %d (%T) has no apiVersion and kind; set its TypeMeta", i, obj)
		}
		// Through a generic map, to drop the "status: {}" that the typed
		// structs always carry before they are submitted. The key order is
		// the same either way: sigs.k8s.io/yaml sorts keys.
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("object %d (%s): %w", i, gvk.Kind, err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("object %d (%s): %w", i, gvk.Kind, err)
		}
		if st, ok := m["status"].(map[string]any); ok && emptyMap(st) {
			delete(m, "status")
		}
		// Likewise the empty "metadata: {}" of a Job's pod template.
		if spec, ok := m["spec"].(map[string]any); ok {
			if tmpl, ok := spec["template"].(map[string]any); ok {
				if md, ok := tmpl["metadata"].(map[string]any); ok && len(md) == 0 {
					delete(tmpl, "metadata")
				}
			}
		}
		doc, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("object %d (%s): %w", i, gvk.Kind, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(doc)
	}
	return buf.Bytes(), nil
}

// emptyMap reports whether m holds nothing but empty maps.
func emptyMap(m map[string]any) bool {
	for _, v := range m {
		if sub, ok := v.(map[string]any); !ok || !emptyMap(sub) {
			return false
		}
	}
	return true
}
