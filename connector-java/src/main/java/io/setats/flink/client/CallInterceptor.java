package io.setats.flink.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;

/**
 * CallInterceptor is a gRPC client interceptor that can add request headers ({@link #onStart}) and
 * wrap the call's response listener ({@link #wrap}); the connector's interceptors (credentials,
 * status codes in trailers, the CDC source's per-call message events) are written as these two
 * hooks.
 */
public abstract class CallInterceptor implements ClientInterceptor {

    /** Called with the request headers before the call starts; adds nothing by default. */
    protected void onStart(Metadata headers) {}

    /** The listener the call reports to instead of {@code listener}; {@code listener} by default. */
    protected <RespT> ClientCall.Listener<RespT> wrap(ClientCall.Listener<RespT> listener) {
        return listener;
    }

    @Override
    public final <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
            MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<ReqT, RespT>(next.newCall(method, callOptions)) {
            @Override
            public void start(Listener<RespT> listener, Metadata headers) {
                onStart(headers);
                super.start(wrap(listener), headers);
            }
        };
    }
}
