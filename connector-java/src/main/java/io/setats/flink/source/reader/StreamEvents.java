package io.setats.flink.source.reader;

import io.setats.flink.client.CallInterceptor;

import io.grpc.ClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.AbstractStub;

/**
 * StreamEvents is a per-call Flight option ({@code CallOptions.GrpcCallOption}) that tells a
 * {@link Listener} about every message and the end of one DoGet, <em>after</em> gRPC handed them
 * to the call's {@code FlightStream}. So once {@link Listener#onMessage()} ran, the stream holds
 * that message and {@code FlightStream.next()} (or {@code getRoot()} for the first message, the
 * schema) returns without blocking; once {@link Listener#onClose()} ran, {@code next()} returns
 * false or throws the call's error at once. This is what lets one fetcher thread multiplex many
 * DoGet streams without a thread per stream.
 *
 * <p>The gateway's DoGet sends the schema followed by record batches only (no dictionary batches,
 * no metadata-only messages), so every message after the first is one {@code next()}.
 *
 * <p>Listener methods run on gRPC's threads, one call's callbacks never concurrently; they must not
 * block.
 */
final class StreamEvents implements org.apache.arrow.flight.CallOptions.GrpcCallOption {

    /** Told about one call's messages and its end; called from gRPC threads. */
    interface Listener {
        /** A message (the schema first, then record batches) is in the FlightStream. */
        void onMessage();

        /** The call ended (completed, failed or cancelled); its end is in the FlightStream. */
        void onClose();
    }

    private final Listener listener;

    StreamEvents(Listener listener) {
        this.listener = listener;
    }

    @Override
    public <T extends AbstractStub<T>> T wrapStub(T stub) {
        return stub.withInterceptors(new Interceptor(listener));
    }

    private static final class Interceptor extends CallInterceptor {
        private final Listener listener;

        Interceptor(Listener listener) {
            this.listener = listener;
        }

        @Override
        protected <RespT> ClientCall.Listener<RespT> wrap(ClientCall.Listener<RespT> delegate) {
            return new ForwardingClientCallListener.SimpleForwardingClientCallListener<RespT>(delegate) {
                @Override
                public void onMessage(RespT message) {
                    super.onMessage(message);
                    listener.onMessage();
                }

                @Override
                public void onClose(Status status, Metadata trailers) {
                    super.onClose(status, trailers);
                    listener.onClose();
                }
            };
        }
    }
}
