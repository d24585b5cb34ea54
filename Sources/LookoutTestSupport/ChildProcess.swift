import Foundation

/// A child process started with `posix_spawn`, for tests that run programs.
///
/// Foundation's `Process` is not used: in the swift-corelibs-foundation of Swift 6.3.1,
/// `Process.run()` reads past a `dirent` name while it looks for the highest open
/// descriptor, and crashes the test process when that record ends at an unmapped page
/// (fixed upstream by swiftlang/swift-corelibs-foundation#5472). A CI run died of it.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: `ended` and `collected` are guarded by `lock`, `outputEnded` by
    // `outputChanged`; the rest never change.

    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// `/dev/null`.
        case discard
        /// Appended to the file at this path.
        case file(String)
        /// Collected by this process: ``output`` after the child closes it.
        case collect
    }

    /// How the child ended.
    public enum Ending: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or 128 plus the signal, as a shell reports it.
        public var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signalled(let signal): 128 + signal
            }
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    private let lock = NSLock()
    private var ended: Ending?
    private var collected = Data()
    private let readerDone = DispatchSemaphore(value: 0)
    private let collects: Bool
    /// Broadcast whenever the collected output grows, and when it ends.
    private let outputChanged = NSCondition()
    /// Whether the collected output has ended; guarded by `outputChanged`.
    private var outputEnded = false

    /// Starts `executable` with `arguments`. Standard output and standard error go where
    /// they are told; when both are `.collect`, they are collected together, in order.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        standardOutput: Output = .discard, standardError: Output = .discard
    ) throws(Failure) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }

        collects = standardOutput.isCollect || standardError.isCollect
        var pipeEnds: [Int32] = [-1, -1]
        if collects {
            guard pipe(&pipeEnds) == 0 else { throw Failure(description: "pipe: \(Self.errorText())") }
        }
        for (stream, output) in [(STDOUT_FILENO, standardOutput), (STDERR_FILENO, standardError)] {
            switch output {
            case .discard:
                posix_spawn_file_actions_addopen(&actions, stream, "/dev/null", O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, stream, path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
            case .collect:
                posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], stream)
            }
        }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        // Only the three standard streams: a test's sockets left open in a child would keep
        // their connections open after the test closes them, and another child holding this
        // one's pipe would keep its output from ending.
        guard Self.addCloseFrom(&actions, 3) == 0 else { throw Failure(description: "closefrom: \(Self.errorText())") }

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        if collects { close(pipeEnds[1]) }
        guard result == 0 else {
            if collects { close(pipeEnds[0]) }
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        if collects {
            let readEnd = pipeEnds[0]
            Thread { [self] in collect(from: readEnd) }.start()
        }
    }

    /// Runs `executable` to its end and returns how it ended, with its standard output and
    /// standard error together.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil
    ) throws(Failure) -> (ending: Ending, output: String) {
        let child = try ChildProcess(
            executable, arguments, environment: environment, standardOutput: .collect, standardError: .collect)
        let ending = child.waitUntilExit()
        return (ending, child.output)
    }

    /// What the child wrote to its collected streams so far; all of it once it has ended.
    public var output: String {
        lock.withLock { String(decoding: collected, as: UTF8.self) }
    }

    /// Waits until the collected output contains `text`, at most `timeout`: woken as soon
    /// as the child writes it, for a test that must act at that moment.
    /// - Returns: whether it does; false when the output ended or the time ran out first.
    public func waitForOutput(containing text: String, timeout: Duration) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds))
        outputChanged.lock()
        defer { outputChanged.unlock() }
        while !output.contains(text) {
            if outputEnded { return false }
            if !outputChanged.wait(until: deadline) { return output.contains(text) }  // timed out
        }
        return true
    }

    /// Whether the child has not ended yet.
    public var isRunning: Bool {
        if lock.withLock({ ended }) != nil { return false }
        return reap(blocking: false) == nil
    }

    /// Waits for the child to end, and for its collected output to close.
    @discardableResult
    public func waitUntilExit() -> Ending {
        let ending = lock.withLock({ ended }) ?? reap(blocking: true)!
        if collects {
            readerDone.wait()
            readerDone.signal()
        }
        return ending
    }

    /// Sends `signal` to the child, unless it has been reaped (its pid may then be another's).
    public func send(_ signal: Int32) {
        lock.withLock {
            if ended == nil { kill(pid, signal) }
        }
    }

    private func reap(blocking: Bool) -> Ending? {
        var status: Int32 = 0
        while true {
            let got = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            if got == -1 && errno == EINTR { continue }
            if got == 0 { return nil }
            if got == -1 {
                // Another thread reaped it; wait for it to say how it ended.
                while lock.withLock({ ended }) == nil { usleep(1_000) }
                return lock.withLock { ended }
            }
            break
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
        let signal = status & 0x7f
        let ending: Ending = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        return lock.withLock {
            if ended == nil { ended = ending }
            return ended
        }
    }

    private func collect(from descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            lock.withLock { collected.append(contentsOf: buffer[0..<count]) }
            outputChanged.lock()
            outputChanged.broadcast()
            outputChanged.unlock()
        }
        outputChanged.lock()
        outputEnded = true
        outputChanged.broadcast()
        outputChanged.unlock()
        close(descriptor)
        readerDone.signal()
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's
    /// Glibc module does not declare: it is a GNU extension.
    private static let addCloseFrom: AddCloseFrom = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("this C library lacks posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later has it)")
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    private static func errorText() -> String { String(cString: strerror(errno)) }
}

extension ChildProcess.Output {
    fileprivate var isCollect: Bool {
        if case .collect = self { return true }
        return false
    }
}
