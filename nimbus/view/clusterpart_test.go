package view

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// testSummary is a built summary of n topologies (two of them named
// "dup") and n supervisors (on hosts host-0 and host-1), sorted as
// clusterSummary sorts.
func testSummary(n int) *nimbusv1.ClusterSummary {
	c := &nimbusv1.ClusterSummary{
		Nimbuses:         []*nimbusv1.NimbusSummary{{Host: "n1", Port: 6627, IsLeader: true}},
		EligibleStandbys: 2, LostTopologies: []string{"gone-9-1"}, ClusterVersion: "0.2",
		NumTopologies: int32(n), NumSupervisors: int32(n), NumSlots: int32(4 * n),
	}
	for i := range n {
		name := fmt.Sprintf("t%03d", i)
		if i < 2 {
			name = "dup"
		}
		c.Topologies = append(c.Topologies, &nimbusv1.TopologySummary{Id: fmt.Sprintf("%s-%d-1", name, i), Name: name})
		c.Supervisors = append(c.Supervisors, &nimbusv1.SupervisorSummary{SupervisorId: fmt.Sprintf("s%03d", i), Host: fmt.Sprintf("host-%d", i%2)})
	}
	return c
}

func topologyIDs(ts []*nimbusv1.TopologySummary) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.GetId())
	}
	return out
}

func supervisorIDs(ss []*nimbusv1.SupervisorSummary) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.GetSupervisorId())
	}
	return out
}

func TestPartOfFilters(t *testing.T) {
	x := newClusterIndex(testSummary(10))
	for _, tc := range []struct {
		name            string
		req             *nimbusv1.GetClusterInfoRequest
		topologies, sup []string
		nimbuses        int
	}{
		{"by name", &nimbusv1.GetClusterInfoRequest{Topologies: []string{"t005"}, OmitSupervisors: true},
			[]string{"t005-5-1"}, nil, 1},
		{"by id", &nimbusv1.GetClusterInfoRequest{Topologies: []string{"t007-7-1"}, OmitSupervisors: true, OmitNimbuses: true},
			[]string{"t007-7-1"}, nil, 0},
		{"a name two share, and an id of one of them", &nimbusv1.GetClusterInfoRequest{Topologies: []string{"dup", "dup-1-1"}, OmitSupervisors: true},
			[]string{"dup-0-1", "dup-1-1"}, nil, 1},
		{"unknown name", &nimbusv1.GetClusterInfoRequest{Topologies: []string{"nope"}, OmitSupervisors: true},
			nil, nil, 1},
		{"supervisors by host and id", &nimbusv1.GetClusterInfoRequest{Supervisors: []string{"host-1", "s002"}, OmitTopologies: true},
			nil, []string{"s001", "s002", "s003", "s005", "s007", "s009"}, 1},
		{"counts only", &nimbusv1.GetClusterInfoRequest{OmitNimbuses: true, OmitSupervisors: true, OmitTopologies: true},
			nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := partOf(x, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			c := resp.GetCluster()
			if got := topologyIDs(c.GetTopologies()); !slices.Equal(got, tc.topologies) {
				t.Errorf("topologies %v, want %v", got, tc.topologies)
			}
			if got := supervisorIDs(c.GetSupervisors()); !slices.Equal(got, tc.sup) {
				t.Errorf("supervisors %v, want %v", got, tc.sup)
			}
			if len(c.GetNimbuses()) != tc.nimbuses {
				t.Errorf("%d nimbuses, want %d", len(c.GetNimbuses()), tc.nimbuses)
			}
			if c.GetNumTopologies() != 10 || c.GetNumSupervisors() != 10 || c.GetNumSlots() != 40 || c.GetEligibleStandbys() != 2 ||
				!slices.Equal(c.GetLostTopologies(), []string{"gone-9-1"}) || c.GetClusterVersion() != "0.2" {
				t.Errorf("the whole cluster's counts and header are not kept: %v", c)
			}
			if resp.GetNextPageToken() != "" {
				t.Errorf("a page token without a page size: %q", resp.GetNextPageToken())
			}
		})
	}
}

// Paging through with every page size gives every item once, in order,
// and the last page has no token.
func TestPartOfPagesThroughEverything(t *testing.T) {
	whole := testSummary(7)
	x := newClusterIndex(whole)
	for size := 1; size <= 8; size++ {
		t.Run(fmt.Sprint("page size ", size), func(t *testing.T) {
			var tops, sups []string
			req := &nimbusv1.GetClusterInfoRequest{PageSize: int32(size)}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("paging does not end")
				}
				resp, err := partOf(x, req)
				if err != nil {
					t.Fatal(err)
				}
				c := resp.GetCluster()
				if len(c.GetTopologies()) > size || len(c.GetSupervisors()) > size {
					t.Fatalf("page of %d topologies and %d supervisors, over %d", len(c.GetTopologies()), len(c.GetSupervisors()), size)
				}
				tops = append(tops, topologyIDs(c.GetTopologies())...)
				sups = append(sups, supervisorIDs(c.GetSupervisors())...)
				if resp.GetNextPageToken() == "" {
					break
				}
				req.PageToken = resp.GetNextPageToken()
			}
			if want := topologyIDs(whole.GetTopologies()); !slices.Equal(tops, want) {
				t.Errorf("topologies %v, want %v", tops, want)
			}
			if want := supervisorIDs(whole.GetSupervisors()); !slices.Equal(sups, want) {
				t.Errorf("supervisors %v, want %v", sups, want)
			}
		})
	}
}

// A page token keeps its place when the cluster changes between pages:
// what was shown is not shown again, and a filter pages too.
func TestPartOfPageTokenSurvivesChanges(t *testing.T) {
	first, err := partOf(newClusterIndex(testSummary(6)), &nimbusv1.GetClusterInfoRequest{PageSize: 3, OmitSupervisors: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := topologyIDs(first.GetCluster().GetTopologies()); !slices.Equal(got, []string{"dup-0-1", "dup-1-1", "t002-2-1"}) {
		t.Fatalf("first page %v", got)
	}
	changed := testSummary(6)
	changed.Topologies = slices.Delete(changed.Topologies, 1, 3) // dup-1-1 and t002 removed
	second, err := partOf(newClusterIndex(changed), &nimbusv1.GetClusterInfoRequest{PageSize: 3, OmitSupervisors: true, PageToken: first.GetNextPageToken()})
	if err != nil {
		t.Fatal(err)
	}
	if got := topologyIDs(second.GetCluster().GetTopologies()); !slices.Equal(got, []string{"t003-3-1", "t004-4-1", "t005-5-1"}) {
		t.Fatalf("second page %v", got)
	}

	filtered := &nimbusv1.GetClusterInfoRequest{PageSize: 1, Topologies: []string{"t004", "dup"}, OmitSupervisors: true}
	var got []string
	for range 4 {
		resp, err := partOf(newClusterIndex(testSummary(6)), filtered)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, topologyIDs(resp.GetCluster().GetTopologies())...)
		if filtered.PageToken = resp.GetNextPageToken(); filtered.PageToken == "" {
			break
		}
	}
	if want := []string{"dup-0-1", "dup-1-1", "t004-4-1"}; !slices.Equal(got, want) {
		t.Fatalf("filtered pages %v, want %v", got, want)
	}
}

func TestPartOfRefusesBadTokens(t *testing.T) {
	x := newClusterIndex(testSummary(3))
	for _, token := range []string{"!!", "bm90IGpzb24", string(make([]byte, 3000))} {
		_, err := partOf(x, &nimbusv1.GetClusterInfoRequest{PageToken: token})
		var ve *validate.Error
		if !errors.As(err, &ve) || ve.Field != "page_token" {
			t.Errorf("token %.20q: got %v, want an error naming page_token", token, err)
		}
	}
}
