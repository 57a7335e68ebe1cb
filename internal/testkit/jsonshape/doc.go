// Package jsonshape compares the shape of a JSON document with a sample
// one (a fixture): the keys it must have and the JSON type of each value.
// The REST API's tests use it to check that what a nimbus serves under
// /api/v1 keeps the field names and JSON types Storm's clients read
// (stormapi/testdata/storm/*.json), whatever the values are.
//
// The rules Check applies, from the fixture's side:
//
//   - An object's every key must be present in actual, with a value that
//     matches the fixture's. Keys of actual the fixture lacks are allowed
//     (Nimbus-HA adds extras).
//   - A string, bool, array or object in the fixture must be met by the
//     same JSON type in actual; an actual null there is a problem.
//   - A number in the fixture must be met by a number. If the fixture's
//     number is written as an integer (no fraction, no exponent: 4, not
//     4.0), actual must be an integer too; a fixture number written with a
//     fraction (4096.0) accepts any number, because Go writes the double
//     0.0 as 0.
//   - null in the fixture means "null or anything": Storm writes null for
//     a field it has no value for (errorPort, errorTime, errorLapsedSecs
//     when there was no error; user when no one is logged in), so the type
//     of such a field cannot be told from a sample.
//   - Every element of an actual array is checked against the fixture
//     array's first element. An empty actual array passes; so does any
//     array when the fixture's is empty.
//
// Problems are named by the path of the value in actual, as
// topologies[0].uptimeSeconds; a key that is not a plain identifier is
// quoted, as configuration["topology.workers"].
//
// ForbidKeys checks that an object lacks some top-level keys (a
// successful answer has no "error"), and Numeric that the values a
// float()-parsing client reads are numbers or numeric strings.
package jsonshape
