import Foundation
import LookoutAuth
import LookoutTestSupport
import Testing

@Suite("Login throttling")
struct LoginThrottleTests {
    @Test("free failures, then growing delays, then a lock that grows; the window forgets")
    func schedule() throws {
        let clock = ManualWallClock()
        let throttle = LoginThrottle(now: { clock.now() })
        var delays: [Double] = []
        for _ in 1..<LoginThrottle.lockoutFailures {
            try throttle.check(email: "a@example.com", address: "10.0.0.1")
            delays.append(throttle.failed(email: "a@example.com", address: "10.0.0.1"))
        }
        #expect(delays == [0, 0, 0, 0.25, 0.5, 1, 2, 4, 4])
        _ = throttle.failed(email: "a@example.com", address: "10.0.0.1")
        #expect(throws: LoginThrottle.Locked(retryAfter: 30)) {
            try throttle.check(email: "A@example.com ", address: "x")
        }
        #expect(throws: LoginThrottle.Locked(retryAfter: 30)) {
            try throttle.check(email: "b@example.com", address: "10.0.0.1")
        }
        try throttle.check(email: "b@example.com", address: "10.0.0.2")
        clock.advance(seconds: 31)
        try throttle.check(email: "a@example.com", address: "10.0.0.1")
        _ = throttle.failed(email: "a@example.com", address: "10.0.0.1")
        #expect(throws: LoginThrottle.Locked(retryAfter: 60), "each failure after the lock doubles it") {
            try throttle.check(email: "a@example.com", address: "10.0.0.3")
        }
        clock.advance(seconds: LoginThrottle.window + 61)
        #expect(throttle.failed(email: "a@example.com", address: "10.0.0.9") == 0, "forgotten after the window")
    }

    @Test("a success clears the account's failures but not the address's")
    func success() throws {
        let throttle = LoginThrottle()
        for _ in 0..<5 { _ = throttle.failed(email: "a@example.com", address: "10.0.0.1") }
        throttle.succeeded(email: "a@example.com")
        #expect(throttle.failed(email: "a@example.com", address: "10.0.0.2") == 0)
        #expect(throttle.failed(email: "c@example.com", address: "10.0.0.1") == 1, "the address's seventh failure")
    }

    @Test("memory is bounded: past capacity the stalest keys are forgotten")
    func bounded() throws {
        let clock = ManualWallClock()
        let throttle = LoginThrottle(capacity: 100, now: { clock.now() })
        for index in 0..<1000 {
            clock.advance(seconds: 0.001)
            _ = throttle.failed(email: "u\(index)@example.com", address: "10.0.\(index / 256).\(index % 256)")
        }
        #expect(throttle.trackedKeys <= 100)
        for _ in 0..<3 { _ = throttle.failed(email: "u999@example.com", address: "10.9.9.9") }
        #expect(
            throttle.failed(email: "u999@example.com", address: "10.9.9.9") == 0.5,
            "the newest account kept its failure from the loop: this is its fifth")
    }
}
