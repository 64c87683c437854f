package blocking

// Codes raised when the coordinator sets up OpenTelemetry export (package
// telemetry) from the standard OTEL_* variables.
const (
	TelemetryConfigInvalid Code = "telemetry_config_invalid"
)

func init() {
	register(
		Entry{TelemetryConfigInvalid, StageCoordinator, "the OpenTelemetry variables cannot be used",
			"An OTEL_EXPORTER_OTLP_ENDPOINT (or a per-signal endpoint) is set, so the coordinator exports traces and metrics, but OTEL_EXPORTER_OTLP_PROTOCOL is not http/protobuf or grpc, an endpoint is not a URL, or OTEL_RESOURCE_ATTRIBUTES does not parse (key=value,key=value). Fix the variable, or unset the endpoint to export nothing, and start oa coordinator serve again."},
	)
}
