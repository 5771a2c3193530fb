package io.chatintake.attachment;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Downloaded files under {@code <data-dir>/media}, content-addressed: {@code <first 2 hex>/<sha256>}.
 * A download streams into {@code media/tmp} while it is hashed and counted, is flushed to disk, and
 * only then linked into place, so a file under its hash is always complete; the same content is
 * kept once, however many attachments carry it.
 */
public final class MediaStore {
    private static final int CHUNK = 64 * 1024;

    private final Path root;
    private final Path tmp;

    /** The stored file; {@code duplicate} when that content was on disk already. */
    public record StoredFile(String sha256, long size, String relativePath, boolean duplicate) {
    }

    /** More bytes than the cap: nothing is kept. */
    public static final class TooLargeException extends Exception {
        TooLargeException(long maxBytes) {
            super("larger than " + maxBytes + " bytes");
        }
    }

    public MediaStore(Path root) {
        this.root = root;
        this.tmp = root.resolve("tmp");
    }

    public StoredFile save(InputStream in, long maxBytes) throws IOException, TooLargeException {
        Files.createDirectories(tmp);
        Path part = Files.createTempFile(tmp, "download-", ".part");
        try {
            MessageDigest sha256 = sha256();
            long size = 0;
            try (FileChannel out = FileChannel.open(part, StandardOpenOption.WRITE)) {
                byte[] buffer = new byte[CHUNK];
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    size += n;
                    if (size > maxBytes) {
                        throw new TooLargeException(maxBytes);
                    }
                    sha256.update(buffer, 0, n);
                    out.write(ByteBuffer.wrap(buffer, 0, n));
                }
                // On disk before the row says stored.
                out.force(true);
            }
            String hash = HexFormat.of().formatHex(sha256.digest());
            String relative = hash.substring(0, 2) + "/" + hash;
            Path target = root.resolve(relative);
            Files.createDirectories(target.getParent());
            boolean duplicate;
            try {
                // Creating the name is atomic: of two downloads of the same content at once, exactly
                // one stores it and the other learns it is a duplicate.
                Files.createLink(target, part);
                duplicate = false;
            } catch (FileAlreadyExistsException e) {
                duplicate = true;
            }
            return new StoredFile(hash, size, relative, duplicate);
        } finally {
            Files.deleteIfExists(part);
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
