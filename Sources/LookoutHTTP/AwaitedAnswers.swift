import CMicroHTTPD

/// Answers being made on a thread that is not an event loop: writes queued for the writer
/// thread's commit. While any is awaited, the loops of a server given this count
/// (``HTTPServerConfiguration/awaitedAnswers``) that hold suspended requests poll for
/// events rather than sleep, for up to 20 times their spin
/// (``HTTPServerConfiguration/spinMicroseconds``), so that what a commit brings them (its
/// writes' answers, the polls it woke) finds them awake: waking a sleeping thread costs
/// 30-80 µs on a virtual machine (Benchmarks/README.md, stop 44).
public final class AwaitedAnswers: @unchecked Sendable {
    // @unchecked: the count is an atomic of the C layer's, freed only by deinit, after
    // every server holding this (through its configuration) has stopped.
    let pointer: OpaquePointer

    public init() {
        guard let pointer = lk_mhd_awaited_create() else { fatalError("out of memory") }
        self.pointer = pointer
    }

    deinit {
        lk_mhd_awaited_free(pointer)
    }

    /// Counts `count` more answers awaited, or, negative, answers made (and the polls
    /// their commit woke posted to their loops).
    public func add(_ count: Int) {
        lk_mhd_awaited_add(pointer, Int32(clamping: count))
    }

    /// Answers awaited now.
    public var count: Int {
        Int(lk_mhd_awaited_count(pointer))
    }
}
