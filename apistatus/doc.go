// Package apistatus is the edge's one mapping of errors to codes: ToStatus
// turns the error a gRPC request ended with into a status, with the
// details clients act on (the field of a bad request; the leader's address
// when a follower is asked), and HTTPStatus gives a REST request's HTTP
// code from the same decision, so both front ends say the same thing.
// Message words an error for a person, the same in stormctl and in the
// REST API's answers.
//
// It knows only package apierr's sentinels and *validate.Error: a lower
// package that wants its error mapped declares it with apierr.Sentinel,
// so this package, and the interceptors, handlers and REST API that use
// it, import neither ZooKeeper nor the code distributor.
package apistatus
