import LookoutJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// The key ring as a file in the data directory, `signing-keys.json`, readable by its
/// owner only.
///
/// Every change is written to a temporary file, flushed, and moved into place, so a
/// reader (the running server) sees the old ring or the new one, never half of one.
/// Rotations take an exclusive lock, so two at once do not lose a key.
public struct KeyRingFile: Sendable {
    public let path: String
    /// The single HS256 key file of earlier versions, adopted on first use so tokens it
    /// signed stay valid.
    private let legacyPath: String
    private let lockPath: String
    private let directory: String

    public init(directory: String) {
        self.directory = directory
        path = directory + "/signing-keys.json"
        legacyPath = directory + "/signing-key"
        lockPath = directory + "/signing-keys.lock"
    }

    /// The stored ring, or nil when there is none yet.
    /// - Throws: ``AuthError/invalidConfiguration(_:)`` when the file exists but is unusable.
    public func load() throws(AuthError) -> KeyRing? {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            guard access(path, F_OK) != 0 else { throw .invalidConfiguration("\(path) exists but cannot be read") }
            return nil
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(Array(bytes))
        } catch {
            throw .invalidConfiguration("\(path) is not JSON")
        }
        do {
            return try KeyRing(fileContents: value)
        } catch {
            throw .invalidConfiguration("\(path): \(error.reason)")
        }
    }

    /// The stored ring; on first use a new one, holding the old single key file's key if
    /// there is one, else a new key of `algorithm`.
    public func loadOrCreate(algorithm: SigningKey.Algorithm, now: Date) throws(AuthError) -> KeyRing {
        if let ring = try load() { return ring }
        let key: SigningKey
        if let legacy = try? String(contentsOfFile: legacyPath, encoding: .utf8) {
            key = try SigningKey(base64: legacy)
        } else {
            key = SigningKey.generate(algorithm)
        }
        let ring = KeyRing(key, created: now)
        // link() refuses to replace: if another process created the file meanwhile, its ring wins.
        let temporary = try writeTemporary(ring)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            guard errno == EEXIST, let theirs = try load() else { throw failure("cannot create \(path)") }
            return theirs
        }
        syncDirectory()
        return ring
    }

    /// Retires the active key and makes a new one of `algorithm` (the active key's when
    /// nil) active; drops keys retired before `now - keepRetired`.
    /// - Returns: the new ring.
    public func rotate(to algorithm: SigningKey.Algorithm?, now: Date, keepRetired: Duration) throws(AuthError)
        -> KeyRing
    {
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw failure("cannot open \(lockPath)") }
        defer { close(lock) }
        guard flock(lock, LOCK_EX) == 0 else { throw failure("cannot lock \(lockPath)") }
        guard let ring = try load() else {
            throw .invalidConfiguration("no signing keys in \(path): start the server once first")
        }
        let cutoff = now.addingTimeInterval(-Double(keepRetired.components.seconds))
        let rotated = ring.rotated(to: algorithm ?? ring.active.algorithm, at: now, droppingRetiredBefore: cutoff)
        let temporary = try writeTemporary(rotated)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw failure("cannot replace \(path)")
        }
        syncDirectory()
        return rotated
    }

    /// What identifies the file's current version: a rotation replaces the file, so its
    /// inode changes.
    func stamp() -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStamp(inode: UInt64(info.st_ino), modified: info.st_mtim.tv_sec, nanoseconds: info.st_mtim.tv_nsec)
    }

    struct FileStamp: Equatable {
        let inode: UInt64
        let modified: Int
        let nanoseconds: Int
    }

    /// Writes `ring` to a new temporary file beside the key file (mode 0600), flushed.
    private func writeTemporary(_ ring: KeyRing) throws(AuthError) -> String {
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("cannot create \(temporary)") }
        defer { close(descriptor) }
        let contents = JSONWriter.encode(ring.fileContents) + [UInt8(ascii: "\n")]
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == contents.count, fsync(descriptor) == 0 else {
            unlink(temporary)
            throw failure("cannot write \(temporary)")
        }
        return temporary
    }

    /// Makes the new directory entry durable.
    private func syncDirectory() {
        let directory = open(directory, O_RDONLY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    private func failure(_ what: String) -> AuthError {
        .invalidConfiguration("\(what): \(String(cString: strerror(errno)))")
    }
}

extension AuthError {
    /// The text of a configuration error, for wrapping it in more context.
    var reason: String {
        if case .invalidConfiguration(let reason) = self { return reason }
        return "\(self)"
    }
}
