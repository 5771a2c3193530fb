package io.chatintake.attachment;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.NoSuchFileException;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Downloaded files as objects in an S3-compatible bucket (AWS S3, MinIO, Ceph), shared by every
 * replica: key {@code <first 2 hex>/<sha256>} as in the local store. A download is spooled and
 * hashed locally first, then uploaded once: an object already there is a duplicate. Of two stores
 * of the same content at once exactly one writes it: in this process a lock per key prefix orders
 * them; across processes the upload is conditional ({@code If-None-Match: *}, atomic on AWS S3 and
 * MinIO). The plain AWS SDK v2 client: this is a store, not a route.
 */
public final class S3MediaStore implements MediaStore {
    static final String BUCKET = "media.s3.bucket";
    static final String ENDPOINT = "media.s3.endpoint";
    static final String REGION = "media.s3.region";
    static final String PATH_STYLE = "media.s3.path-style-access";
    static final String ACCESS_KEY_ID = "media.s3.access-key-id";
    static final String SECRET_ACCESS_KEY = "media.s3.secret-access-key";

    private final S3Client s3;
    private final String bucket;
    private final MediaSpool spool;
    private final String where;
    // One lock per first key byte: bounded, and equal content always meets the same lock.
    private final ReentrantLock[] keyLocks = new ReentrantLock[256];

    private S3MediaStore(S3Client s3, String bucket, MediaSpool spool, String where) {
        this.s3 = s3;
        this.bucket = bucket;
        this.spool = spool;
        this.where = where;
        Arrays.setAll(keyLocks, i -> new ReentrantLock());
    }

    /** From the {@code media.s3.*} keys; checks at once that the bucket is there and reachable. */
    static S3MediaStore configured(Settings settings, MediaSpool spool) {
        String bucket = settings.get(BUCKET).orElseThrow(() -> new ConfigurationException(
                named(BUCKET) + " must name a bucket when " + MediaStore.STORE + "=s3"));
        String region = settings.value(REGION);
        S3ClientBuilder builder = S3Client.builder()
                .region(Region.of(region))
                .forcePathStyle(settings.getBoolean(PATH_STYLE))
                .credentialsProvider(credentials(settings))
                // Checksums only where S3 requires them: MinIO and Ceph do not all know the newer ones.
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED);
        Optional<URI> endpoint = settings.get(ENDPOINT).map(S3MediaStore::endpoint);
        endpoint.ifPresent(builder::endpointOverride);
        String location = endpoint.map(u -> "at " + u).orElse("in AWS region " + region);
        String where = "S3 bucket '" + bucket + "' " + location;
        S3Client s3 = builder.build();
        try {
            s3.headBucket(b -> b.bucket(bucket));
        } catch (S3Exception e) {
            s3.close();
            throw new ConfigurationException(switch (e.statusCode()) {
                case 404 -> named(BUCKET) + ": no bucket '" + bucket + "' " + location;
                case 301, 400 -> named(REGION) + ": bucket '" + bucket + "' is not in region " + region + " (S3 answered " + e.statusCode() + ")";
                case 401, 403 -> named(BUCKET) + ": access to bucket '" + bucket + "' denied; check " + named(ACCESS_KEY_ID)
                        + " and " + named(SECRET_ACCESS_KEY) + " (S3 answered " + e.statusCode() + ")";
                default -> named(BUCKET) + ": cannot use " + where + ": S3 answered " + e.statusCode();
            });
        } catch (SdkException e) {
            s3.close();
            throw new ConfigurationException(named(ENDPOINT) + ": cannot reach " + where + ": " + e.getMessage());
        }
        return new S3MediaStore(s3, bucket, spool, where);
    }

    @Override
    public StoredFile save(InputStream in, long maxBytes) throws IOException, TooLargeException {
        try (MediaSpool.Spooled part = spool.write(in, maxBytes)) {
            ReentrantLock lock = keyLocks[Integer.parseInt(part.sha256().substring(0, 2), 16)];
            lock.lock();
            try {
                return new StoredFile(part.sha256(), part.size(), part.key(), !upload(part));
            } finally {
                lock.unlock();
            }
        }
    }

    /** @return whether this call wrote the object (false: that content was there already) */
    private boolean upload(MediaSpool.Spooled part) throws IOException {
        try {
            s3.headObject(h -> h.bucket(bucket).key(part.key()));
            return false; // stored before: no need to send the bytes again
        } catch (NoSuchKeyException e) {
            // Not there yet: upload below.
        } catch (S3Exception e) {
            if (e.statusCode() != 404) {
                throw failed("look up", part.key(), e);
            }
        } catch (SdkException e) {
            throw failed("look up", part.key(), e);
        }
        try {
            s3.putObject(p -> p.bucket(bucket).key(part.key()).contentLength(part.size()).ifNoneMatch("*"),
                    RequestBody.fromFile(part.file()));
            return true;
        } catch (S3Exception e) {
            if (e.statusCode() == 412) {
                return false; // another store of the same content won the race
            }
            throw failed("upload", part.key(), e);
        } catch (SdkException e) {
            throw failed("upload", part.key(), e);
        }
    }

    @Override
    public InputStream open(String relativePath) throws IOException {
        try {
            return s3.getObject(g -> g.bucket(bucket).key(relativePath));
        } catch (NoSuchKeyException e) {
            throw new NoSuchFileException(relativePath, null, "not in " + where);
        } catch (SdkException e) {
            throw failed("read", relativePath, e);
        }
    }

    @Override
    public void delete(String relativePath) throws IOException {
        try {
            s3.deleteObject(d -> d.bucket(bucket).key(relativePath));
        } catch (SdkException e) {
            throw failed("delete", relativePath, e);
        }
    }

    @Override
    public String description() {
        return where;
    }

    @Override
    public void close() {
        s3.close();
    }

    /** An I/O failure the fetcher retries; the SDK's messages hold no credential. */
    private IOException failed(String what, String key, SdkException e) {
        return new IOException("S3 " + what + " of " + key + " in bucket '" + bucket + "' failed: " + e.getMessage(), e);
    }

    private static AwsCredentialsProvider credentials(Settings settings) {
        Optional<String> id = settings.get(ACCESS_KEY_ID);
        Optional<String> secret = settings.get(SECRET_ACCESS_KEY);
        if (id.isPresent() != secret.isPresent()) {
            String missing = id.isPresent() ? SECRET_ACCESS_KEY : ACCESS_KEY_ID;
            throw new ConfigurationException(named(missing) + " must be set too: set both "
                    + named(ACCESS_KEY_ID) + " and " + named(SECRET_ACCESS_KEY) + ", or neither (the AWS default credentials chain)");
        }
        if (id.isEmpty()) {
            return DefaultCredentialsProvider.builder().build();
        }
        return StaticCredentialsProvider.create(AwsBasicCredentials.create(id.get(), secret.get()));
    }

    /** An http(s) endpoint; shown without any user info it might carry. */
    private static URI endpoint(String text) {
        try {
            URI uri = new URI(text);
            if (uri.getHost() == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))) {
                throw new URISyntaxException(text, "not an http(s) URL with a host");
            }
            return new URI(uri.getScheme(), null, uri.getHost(), uri.getPort(), uri.getPath(), null, null);
        } catch (URISyntaxException e) {
            throw new ConfigurationException(named(ENDPOINT) + " must be an http(s) URL such as http://minio:9000");
        }
    }

    private static String named(String key) {
        return Settings.envName(key) + " (" + key + ")";
    }
}
