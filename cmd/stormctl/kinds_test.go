package main

import nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"

// The kinds a topology file gives its spouts and bolts.
const (
	spout = nimbusv1.ComponentKind_COMPONENT_KIND_SPOUT
	bolt  = nimbusv1.ComponentKind_COMPONENT_KIND_BOLT
)
