import Synchronization

/// A request's id: the client's own, or a serial number written as 16 hexadecimal digits
/// only when the id is shown (on errors and in logs), which most answers never need.
struct RequestID: Sendable, CustomStringConvertible {
    /// The client's own id, which every answer echoes; nil for a server-made one.
    let echoed: String?
    private let serial: UInt64

    init(echoed: String) {
        self.echoed = echoed
        serial = 0
    }

    init(serial: UInt64) {
        echoed = nil
        self.serial = serial
    }

    var description: String {
        if let echoed { return echoed }
        let hex = String(serial, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.utf8.count)) + hex
    }
}

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

    /// The id of a request that brought `clientProvided` (``echoed(_:)`` decides whether
    /// it is kept), else a fresh one.
    func id(for clientProvided: String?) -> RequestID {
        if let echoed = Self.echoed(clientProvided) { return RequestID(echoed: echoed) }
        return RequestID(serial: counter.wrappingAdd(1, ordering: .relaxed).newValue)
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
