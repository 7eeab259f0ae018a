package io.setats.flink.client;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;

/**
 * SetatsGatewayException is a failed call to the Setats gateway. Its message keeps the gateway's
 * own message verbatim (it names table, column, option or offset, SPEC section 6) after the call
 * and the gRPC status code, e.g. {@code DoPut testdb.t on grpc://127.0.0.1:8815 failed:
 * INVALID_ARGUMENT: <gateway message>}.
 */
public class SetatsGatewayException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String code;
    private final String gatewayMessage;

    public SetatsGatewayException(String call, String code, String gatewayMessage, Throwable cause) {
        super(call + " failed: " + code + ": " + gatewayMessage, cause);
        this.code = code;
        this.gatewayMessage = gatewayMessage;
    }

    /** Maps an Arrow Flight error to a SetatsGatewayException, keeping the gateway's message. */
    public static SetatsGatewayException of(String call, Throwable t) {
        if (t instanceof SetatsGatewayException) {
            return (SetatsGatewayException) t;
        }
        if (t instanceof FlightRuntimeException) {
            FlightRuntimeException f = (FlightRuntimeException) t;
            String desc = f.status().description();
            if (desc == null || desc.isEmpty()) {
                desc = f.getMessage();
            }
            return new SetatsGatewayException(call, grpcCode(f), desc, t);
        }
        return new SetatsGatewayException(
                call, FlightStatusCode.UNKNOWN.name(), String.valueOf(t), t);
    }

    /**
     * The gRPC status code behind a Flight error. Arrow Flight folds some gRPC codes into its
     * own (FAILED_PRECONDITION and OUT_OF_RANGE become INVALID_ARGUMENT); the gRPC status kept as
     * the cause still has the gateway's code, which SPEC section 6 promises.
     */
    private static String grpcCode(FlightRuntimeException f) {
        if (f.status().metadata() != null
                && f.status().metadata().containsKey(GatewayClient.GRPC_CODE_KEY.name())) {
            String code = f.status().metadata().get(GatewayClient.GRPC_CODE_KEY.name());
            if (code != null && !code.isEmpty()) {
                return code;
            }
        }
        for (Throwable c = f.status().cause(); c != null && c != c.getCause(); c = c.getCause()) {
            if (c instanceof StatusRuntimeException || c instanceof StatusException) {
                return Status.fromThrowable(c).getCode().name();
            }
        }
        return f.status().code().name();
    }

    /** The gRPC/Flight status code name, e.g. {@code INVALID_ARGUMENT}, {@code NOT_FOUND}. */
    public String code() {
        return code;
    }

    /** The gateway's message, verbatim. */
    public String gatewayMessage() {
        return gatewayMessage;
    }

    /**
     * Whether the call may succeed when retried on a new connection: the gateway was unreachable
     * or restarting, or the stream broke (UNAVAILABLE, CANCELLED, UNKNOWN, DEADLINE_EXCEEDED,
     * ABORTED, INTERNAL). Refusals of the request itself (INVALID_ARGUMENT, FAILED_PRECONDITION,
     * NOT_FOUND, RESOURCE_EXHAUSTED, ...) are not.
     */
    public boolean isRetryable() {
        switch (code) {
            case "UNAVAILABLE":
            case "CANCELLED":
            case "UNKNOWN":
            case "DEADLINE_EXCEEDED":
            case "TIMED_OUT":
            case "ABORTED":
            case "INTERNAL":
                return true;
            default:
                return false;
        }
    }

    /** Whether the status code is {@code NOT_FOUND}. */
    public boolean isNotFound() {
        return FlightStatusCode.NOT_FOUND.name().equals(code);
    }
}
