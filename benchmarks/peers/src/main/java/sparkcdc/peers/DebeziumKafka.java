package sparkcdc.peers;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.JsonByteArray;
import java.io.FileReader;
import java.io.IOException;
import java.io.Reader;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Debezium side of benchmarks/peers.py: Debezium's MySQL connector in the embedded engine, every change event
 * sent to Kafka the way Debezium Server's Kafka sink sends it (each batch sent asynchronously, then every send
 * awaited before the batch's offsets are marked processed), so an event counts only once the broker acknowledged it.
 *
 * <p>Usage: {@code java -cp ... sparkcdc.peers.DebeziumKafka engine.properties}. The properties are the engine's
 * and the connector's (connector.class, offset.storage.file.filename, topic.prefix, ...); keys starting with
 * {@code producer.} go to the Kafka producer without the prefix (bootstrap.servers at least). On stdout one JSON line
 * per lifecycle step ({@code {"event": "streaming", "ms": ...}} once the connector polls) and a line with the number
 * of events sent every second, for the benchmark's log; SIGTERM closes the engine (committing its offsets) and the
 * producer, and exits 0.
 */
public final class DebeziumKafka {
    private DebeziumKafka() {}

    public static void main(String[] args) throws IOException, InterruptedException {
        if (args.length != 1) {
            System.err.println("usage: DebeziumKafka <engine.properties>");
            System.exit(2);
        }
        Properties all = new Properties();
        try (Reader in = new FileReader(args[0])) {
            all.load(in);
        }
        Properties engineProps = new Properties();
        Properties producerProps = new Properties();
        for (String key : all.stringPropertyNames()) {
            if (key.startsWith("producer.")) {
                producerProps.setProperty(key.substring("producer.".length()), all.getProperty(key));
            } else {
                engineProps.setProperty(key, all.getProperty(key));
            }
        }
        producerProps.putIfAbsent(ProducerConfig.ACKS_CONFIG, "all");
        producerProps.putIfAbsent(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer());
        AtomicLong sent = new AtomicLong();
        AtomicBoolean stopping = new AtomicBoolean();

        DebeziumEngine<ChangeEvent<byte[], byte[]>> engine = DebeziumEngine.create(JsonByteArray.class)
                .using(engineProps)
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        event("task-started");
                    }

                    @Override
                    public void pollingStarted() {
                        event("streaming");
                    }
                })
                .using((success, message, error) -> {
                    if (!success) {
                        System.err.println("Error: Debezium engine stopped: " + message
                                + (error == null ? "" : " (" + error + ")"));
                    }
                })
                .notifying((records, committer) -> {
                    List<Future<RecordMetadata>> acks = new ArrayList<>(records.size());
                    for (ChangeEvent<byte[], byte[]> r : records) {
                        acks.add(producer.send(new ProducerRecord<>(r.destination(), r.key(), r.value())));
                    }
                    for (Future<RecordMetadata> ack : acks) {
                        try {
                            ack.get();
                        } catch (ExecutionException e) {
                            throw new IllegalStateException("Kafka refused an event: " + e.getCause(), e);
                        }
                    }
                    for (ChangeEvent<byte[], byte[]> r : records) {
                        committer.markProcessed(r);
                    }
                    committer.markBatchFinished();
                    sent.addAndGet(records.size());
                })
                .build();

        ExecutorService runner = Executors.newSingleThreadExecutor();
        Future<?> running = runner.submit(engine);
        Thread stopper = new Thread(() -> {
            stopping.set(true);
            try {
                engine.close();
                runner.shutdown();
                runner.awaitTermination(60, TimeUnit.SECONDS);
            } catch (IOException | InterruptedException e) {
                System.err.println("Error: closing the engine: " + e);
            } finally {
                producer.close();
                System.out.println("{\"event\": \"stopped\", \"sent\": " + sent.get() + "}");
                System.out.flush();
            }
        });
        Runtime.getRuntime().addShutdownHook(stopper);
        long last = -1;
        while (!running.isDone()) {
            long now = sent.get();
            if (now != last) {
                System.out.println("{\"sent\": " + now + ", \"ms\": " + System.currentTimeMillis() + "}");
                System.out.flush();
                last = now;
            }
            try {
                running.get(1, TimeUnit.SECONDS);
            } catch (ExecutionException | TimeoutException e) {
                // still running, or failed (the completion callback said why)
            }
        }
        if (stopping.get()) {
            return; // SIGTERM: the shutdown hook finishes
        }
        Runtime.getRuntime().removeShutdownHook(stopper);
        runner.shutdown();
        producer.close();
        System.exit(1); // the engine ended without being asked to (its error is on stderr): a failure
    }

    private static void event(String name) {
        System.out.println("{\"event\": \"" + name + "\", \"ms\": " + System.currentTimeMillis() + "}");
        System.out.flush();
    }
}
