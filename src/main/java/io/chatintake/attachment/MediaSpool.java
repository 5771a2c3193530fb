package io.chatintake.attachment;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The directory ({@code media/tmp}) a download streams into while it is hashed and counted,
 * before a {@link MediaStore} keeps it under its content key. A spooled file is flushed to disk
 * and deleted when its {@link Spooled} is closed.
 */
final class MediaSpool {
    private static final int CHUNK = 64 * 1024;

    private final Path dir;

    /** A complete download: its file under the spool, content hash and size. */
    record Spooled(Path file, String sha256, long size) implements AutoCloseable {
        /** {@code <first 2 hex>/<sha256>}: the key every store keeps it under. */
        String key() {
            return sha256.substring(0, 2) + "/" + sha256;
        }

        @Override
        public void close() throws IOException {
            Files.deleteIfExists(file);
        }
    }

    MediaSpool(Path dir) {
        this.dir = dir;
    }

    Spooled write(InputStream in, long maxBytes) throws IOException, MediaStore.TooLargeException {
        Files.createDirectories(dir);
        Path part = Files.createTempFile(dir, "download-", ".part");
        try {
            MessageDigest sha256 = sha256();
            long size = 0;
            try (FileChannel out = FileChannel.open(part, StandardOpenOption.WRITE)) {
                byte[] buffer = new byte[CHUNK];
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    size += n;
                    if (size > maxBytes) {
                        throw new MediaStore.TooLargeException(maxBytes);
                    }
                    sha256.update(buffer, 0, n);
                    out.write(ByteBuffer.wrap(buffer, 0, n));
                }
                // On disk before the row says stored.
                out.force(true);
            }
            return new Spooled(part, HexFormat.of().formatHex(sha256.digest()), size);
        } catch (IOException | MediaStore.TooLargeException | RuntimeException e) {
            Files.deleteIfExists(part);
            throw e;
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
