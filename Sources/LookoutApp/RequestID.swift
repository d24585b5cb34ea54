import Synchronization

/// Makes request ids for requests that bring none of their own.
///
/// A request's id is the client's own `X-Request-Id` when it is short and plain
/// (``isAcceptable(_:)``), and is then echoed on every answer; otherwise it is made here,
/// logged, and shown on errors only (``RequestContext/echoedRequestID``).
final class RequestIDGenerator: Sendable {
    private let counter: Atomic<UInt64>

    init() {
        // A random start, so ids from different runs do not collide in shared logs.
        counter = Atomic(UInt64.random(in: 0...(UInt64.max >> 8)))
    }

    /// The client's own id, when acceptable.
    static func echoed(_ clientProvided: String?) -> String? {
        clientProvided.flatMap { isAcceptable($0) ? $0 : nil }
    }

    /// A fresh id: 16 hexadecimal digits.
    func next() -> String {
        let value = counter.add(1, ordering: .relaxed).newValue
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.utf8.count)) + hex
    }

    /// 1–64 characters of letters, digits, `-`, `_` and `.`: safe to echo and to log.
    static func isAcceptable(_ id: String) -> Bool {
        let bytes = id.utf8
        return (1...64).contains(bytes.count)
            && bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default: false
                }
            }
    }
}
