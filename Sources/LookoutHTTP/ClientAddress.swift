#if canImport(Glibc)
    import Glibc
#endif

/// A client's IP address, kept as its bytes and written as text only when asked: most
/// requests never need it, and formatting it costs a `sprintf` and allocations.
public struct ClientAddress: Sendable, Equatable, CustomStringConvertible {
    private enum Storage: Sendable, Equatable {
        case text(String)
        case ipv4(UInt32)
        case ipv6(UInt64, UInt64)
    }

    private let storage: Storage

    /// An address given as text, e.g. `127.0.0.1` or `::1` (or empty when unknown).
    public init(_ text: String) {
        storage = .text(text)
    }

    /// 4 (IPv4) or 16 (IPv6) bytes in network order; any other count is an unknown address.
    init(bytes: UnsafeRawBufferPointer) {
        switch bytes.count {
        case 4: storage = .ipv4(bytes.loadUnaligned(as: UInt32.self))
        case 16:
            storage = .ipv6(
                bytes.loadUnaligned(as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        default: storage = .text("")
        }
    }

    /// The address as text: `127.0.0.1`, `::1`; empty when unknown.
    public var description: String {
        switch storage {
        case .text(let text): return text
        case .ipv4(let raw): return Self.format(AF_INET, raw)
        case .ipv6(let high, let low): return Self.format(AF_INET6, (high, low))
        }
    }

    private static func format<Bytes>(_ family: Int32, _ bytes: Bytes) -> String {
        withUnsafeBytes(of: bytes) { raw in
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
                guard let base = buffer.baseAddress,
                    inet_ntop(family, raw.baseAddress, base, socklen_t(buffer.count)) != nil
                else { return "" }
                return String(cString: base)
            }
        }
    }
}
