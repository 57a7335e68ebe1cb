package stormapi

import (
	"context"
	"encoding/json"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// loggerJSON is one named logger of Storm's logconfig: GET answers every
// field; POST reads target_level (null or "" removes the logger),
// reset_level and timeout (seconds; 0 or absent: none).
type loggerJSON struct {
	TargetLevel  *string `json:"target_level"`
	ResetLevel   string  `json:"reset_level,omitempty"`
	Timeout      int32   `json:"timeout"`
	TimeoutEpoch int64   `json:"timeout_epoch,omitempty"`
}

// logConfigJSON is Storm's /topology/:id/logconfig body.
type logConfigJSON struct {
	NamedLoggerLevels map[string]loggerJSON `json:"namedLoggerLevels"`
}

// logConfig answers GET /api/v1/topology/:id/logconfig: the topology's
// log levels whose timeout has not passed, in Storm's shape.
func (a *API) logConfig(r *request) ([]byte, error) {
	_, info, err := a.topologyInfo(r)
	if err != nil {
		return nil, err
	}
	return encodeLogConfig(info.GetLogLevels())
}

// setLogConfig answers POST /api/v1/topology/:id/logconfig: the body's
// loggers set or removed at the leader, as the caller; the answer is the
// topology's log levels after the change.
func (a *API) setLogConfig(r *request) ([]byte, error) {
	req, err := readLogConfig(r)
	if err != nil {
		return nil, err
	}
	var levels map[string]*clusterv1.LoggerLevel
	if _, err := a.act(r, "logconfig", func(ctx context.Context, name string) error {
		req.Name = name
		resp, err := a.cfg.Actions.SetLogConfig(ctx, req)
		levels = resp.GetLogLevels()
		return err
	}); err != nil {
		return nil, err
	}
	return encodeLogConfig(levels)
}

// readLogConfig reads a POST's body into a SetLogConfig request (its name
// not set), checked as the gRPC request is.
func readLogConfig(r *request) (*nimbusv1.SetLogConfigRequest, error) {
	var body logConfigJSON
	if err := readJSONBody(r, &body, `{"namedLoggerLevels": {"LOGGER": {"target_level": "DEBUG", "reset_level": "INFO", "timeout": 30}}}`); err != nil {
		return nil, err
	}
	req := &nimbusv1.SetLogConfigRequest{Set: map[string]*clusterv1.LoggerLevel{}, Name: "-"}
	for name, l := range body.NamedLoggerLevels {
		if l.TargetLevel == nil || *l.TargetLevel == "" {
			req.Remove = append(req.Remove, name)
			continue
		}
		req.Set[name] = &clusterv1.LoggerLevel{TargetLevel: *l.TargetLevel, ResetLevel: l.ResetLevel, TimeoutSecs: l.Timeout}
	}
	if err := validate.SetLogConfig(req); err != nil {
		return nil, err
	}
	return req, nil
}

// encodeLogConfig is levels in Storm's shape.
func encodeLogConfig(levels map[string]*clusterv1.LoggerLevel) ([]byte, error) {
	out := logConfigJSON{NamedLoggerLevels: map[string]loggerJSON{}}
	for name, l := range levels {
		target := l.GetTargetLevel()
		out.NamedLoggerLevels[name] = loggerJSON{
			TargetLevel: &target, ResetLevel: l.GetResetLevel(),
			Timeout: l.GetTimeoutSecs(), TimeoutEpoch: l.GetTimeoutUnixMs(),
		}
	}
	return json.Marshal(out)
}
