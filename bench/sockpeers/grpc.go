package main

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gorma-hpc/gorma/bench/connbench"
)

// The grpc test: a unary Echo of a BytesValue (protobuf's own message type, so no
// generated code), timed as pingpong is, at each --sizes size up to 64 KiB, a tenth of
// its round trips.
const echoMethod = "/sockbench.Echo/Echo"

var echoService = grpc.ServiceDesc{
	ServiceName: "sockbench.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return in, nil
		},
	}},
}

func init() {
	connbench.RegisterTest(connbench.Test{Name: "grpc", Serve: serveGRPC, Run: runGRPC})
}

func serveGRPC(l net.Listener, _ *connbench.Options) error {
	s := grpc.NewServer()
	s.RegisterService(&echoService, struct{}{})
	err := s.Serve(l)
	s.Stop()
	return err
}

func runGRPC(ctx context.Context, env *connbench.Env) (connbench.Result, error) {
	r := connbench.Result{Name: "grpc", Kind: connbench.KindLatency, Title: "gRPC unary round trip (Echo of a BytesValue)"}
	cc, err := grpc.NewClient("passthrough:///sockbench",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return env.DialServed(ctx) }))
	if err != nil {
		return r, err
	}
	defer cc.Close()
	for _, size := range env.O.Sizes {
		if size > 64<<10 {
			continue
		}
		in, out := &wrapperspb.BytesValue{Value: connbench.Fill(make([]byte, size))}, new(wrapperspb.BytesValue)
		iters := max(env.O.Iters/10, 20)
		row, err := connbench.Time(size, max(iters/10, 3), iters, func() error {
			if err := cc.Invoke(ctx, echoMethod, in, out); err != nil {
				return err
			}
			if len(out.Value) != size {
				return fmt.Errorf("echo of %d bytes came back with %d", size, len(out.Value))
			}
			return nil
		})
		if err != nil {
			return r, fmt.Errorf("%d bytes: %w", size, err)
		}
		r.Rows = append(r.Rows, row)
	}
	return r, nil
}
