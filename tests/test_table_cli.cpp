// Tests of the command line on tables (CSV files), run as a user runs `normnet`: train infers or
// takes the task, names its classes and keeps the schema in the checkpoint; eval (text and --json)
// and predict apply the stored preprocessing; bad files and options give one line and create
// nothing; a resumed table run ends bit for bit where a straight one does; and on scikit-learn's
// real tables the default recipe comes near scikit-learn's own baseline on the same split.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_helpers.hpp"
#include "test_helpers.hpp"

using namespace normnet::test;
using Catch::Contains;

namespace {

// 3 classes (text) decided by two numeric features and a text one, with a little noise: a
// learnable table of `rows` rows with a header.
std::string class_table(int rows, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> noise(0.0, 0.3);
    std::uniform_real_distribution<double> u(-2, 2);
    std::string csv = "width,height,colour,kind\n";
    const char* colours[] = {"red", "green", "blue"};
    for (int r = 0; r < rows; ++r) {
        const double w = u(gen), h = u(gen);
        const int c = r % 3;
        const double score = w + h + (c == 2 ? 1.5 : 0) + noise(gen);
        const char* kind = score < -1 ? "small" : score < 1 ? "medium, mid" : "large";  // a name with a comma
        char line[160];
        std::snprintf(line, sizeof line, "%.4f,%.4f,%s,\"%s\"\n", w, h, colours[c], kind);
        csv += line;
    }
    return csv;
}

// y = 3 x1 - 2 x2 + 10 + noise, in units far from 1 (so that the target's standardisation matters).
std::string regression_table(int rows, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> noise(0.0, 0.1);
    std::uniform_real_distribution<double> u(-1, 1);
    std::string csv = "x1,x2,y\n";
    for (int r = 0; r < rows; ++r) {
        const double a = u(gen), b = u(gen);
        char line[96];
        std::snprintf(line, sizeof line, "%.5f,%.5f,%.5f\n", a, b, 100 * (3 * a - 2 * b + 10 + noise(gen)));
        csv += line;
    }
    return csv;
}

std::string write_text(const TempDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

std::vector<std::string> quick(const std::vector<std::string>& more) {
    return with({"train", "--threads", "1", "--quiet"}, more);
}

}  // namespace

TEST_CASE("table cli: a CSV classification trains, says the task it chose, names its classes, and eval and predict use them",
          "[cli][table]") {
    TempDir dir;
    const std::string data = write_text(dir, "shapes.csv", class_table(600, 1));
    const std::string run = dir / "run";
    const RunResult r = run_normnet(with({"train", "--data", data, "--out", run, "--threads", "1"}, {"--epochs", "10"}),
                                    dir.work());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("480 training / 120 held-out rows, classification of kind into 3 classes (the target holds text)"));
    CHECK_THAT(r.out, Contains("5-300-100-3"));  // 2 numbers + 3 colours one-hot, 3 classes
    const auto config = nlohmann::json::parse(read_file(run + "/config.json"));
    CHECK(config.at("target") == "");
    CHECK_FALSE(config.contains("dataset"));  // a table run has no image dataset
    const auto model = normnet::load_safetensors(run + "/model.safetensors");
    const auto schema = nlohmann::json::parse(model.metadata.at("normnet.table"));
    CHECK(schema.at("classes") == nlohmann::json({"large", "medium, mid", "small"}));

    const RunResult e = run_normnet({"eval", "--checkpoint", run, "--json"}, dir.work());
    INFO(e.err);
    REQUIRE(e.status == 0);
    const auto measures = nlohmann::json::parse(e.out);
    CHECK(measures.at("count") == 120);
    CHECK(measures.at("accuracy").get<double>() >= 0.85);
    CHECK(measures.at("classes") == schema.at("classes"));
    CHECK(measures.at("confusion").size() == 3);
    const RunResult text = run_normnet({"eval", "--checkpoint", run}, dir.work());
    CHECK_THAT(text.out, Contains("held-out rows): 120 rows"));
    CHECK_THAT(text.out, Contains("medium, mid"));

    // New rows without the target column, the columns in another order.
    const std::string fresh = write_text(dir, "new.csv", "colour,height,width\nblue,1.5,1.5\nred,-1.5,-1.8\n");
    const RunResult p = run_normnet({"predict", "--checkpoint", run, "--input", fresh}, dir.work());
    INFO(p.err);
    REQUIRE(p.status == 0);
    const auto lines = lines_of(p.out);
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "row,prediction,p_large,\"p_medium, mid\",p_small");
    CHECK(lines[1].rfind("0,large,", 0) == 0);
    CHECK(lines[2].rfind("1,small,", 0) == 0);
    double sum = 0;
    for (size_t i = 2; i < csv_cells(lines[1]).size(); ++i) sum += std::stod(csv_cells(lines[1])[i]);
    CHECK(sum == Approx(1.0).margin(1e-5));
    // --out: written whole, one line on stdout.
    const RunResult to_file = run_normnet({"predict", "--checkpoint", run, "--input", data, "--out", dir / "p.csv"}, dir.work());
    CHECK(to_file.status == 0);
    CHECK(to_file.out == "600 predictions written to " + (dir / "p.csv") + "\n");
    CHECK(lines_of(read_file(dir / "p.csv")).size() == 601);
}

TEST_CASE("table cli: a regression reports RMSE, MAE and R^2 in the target's units, in metrics.csv, eval and predict",
          "[cli][table]") {
    TempDir dir;
    const std::string train = write_text(dir, "train.csv", regression_table(800, 2));
    const std::string test = write_text(dir, "test.csv", regression_table(200, 3));
    const std::string run = dir / "run";
    const RunResult r = run_normnet(quick({"--data", train, "--test", test, "--out", run, "--epochs", "20", "--norm", "none",
                                           "--batch-size", "32"}),
                                    dir.work());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("final test rmse"));
    const auto metrics = lines_of(read_file(run + "/metrics.csv"));
    REQUIRE(metrics.size() == 21);
    CHECK(metrics[0] == "epoch,train_loss,test_loss,test_rmse,test_mae,test_r2,epoch_seconds,lr");
    const RunResult e = run_normnet({"eval", "--checkpoint", run, "--json"}, dir.work());
    INFO(e.err);
    REQUIRE(e.status == 0);
    const auto m = nlohmann::json::parse(e.out);
    CHECK(m.at("count") == 200);
    CHECK(m.at("r2").get<double>() > 0.95);
    CHECK(m.at("rmse").get<double>() < 100);  // the target's spread is ~400
    CHECK_FALSE(m.contains("accuracy"));
    CHECK(std::stod(csv_cells(metrics[20])[5]) == Approx(m.at("r2").get<double>()).margin(1e-6));
    const std::string fresh = write_text(dir, "new.csv", "x1,x2\n0.5,-0.5\n");
    const RunResult p = run_normnet({"predict", "--checkpoint", run, "--input", fresh}, dir.work());
    REQUIRE(p.status == 0);
    const auto lines = lines_of(p.out);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "row,prediction");
    CHECK(std::stod(csv_cells(lines[1])[1]) == Approx(1250).margin(60));  // 100 * (1.5 + 1 + 10)
}

TEST_CASE("table cli: bad tables and options give one line naming the file, line and column, and create nothing",
          "[cli][table]") {
    TempDir dir;
    const std::string good = write_text(dir, "good.csv", class_table(60, 4));
    const std::string out = dir / "run";
    struct Bad {
        const char* name;
        std::string text;
        std::vector<std::string> mentions;
    };
    const std::vector<Bad> files{
        {"empty.csv", "", {"empty.csv", "empty"}},
        {"ragged.csv", "a,b,y\n1,2,x\n3,y\n", {"ragged.csv", "line 3"}},
        {"missing.csv", "a,b,y\n1,2,x\n3,,y\n", {"missing.csv", "line 3", "column 2"}},
        {"word.csv", "a,b,y\n1,2,x\n3,4,x\n5,6,y\n7,8,y\n9,ten,x\n", {"word.csv", "line 6"}},
        {"twice.csv", "a,a,y\n1,2,x\n", {"twice.csv", "\"a\""}},
    };
    for (const Bad& f : files) {
        INFO(f.name);
        const std::string path = write_text(dir, f.name, f.text);
        require_failure(dir, quick({"--data", path, "--out", out}), 1, f.mentions);
    }
    require_failure(dir, quick({"--data", good, "--target", "nope", "--out", out}), 1, {"nope", "good.csv"});
    require_failure(dir, quick({"--data", good, "--test", dir / "absent.csv", "--out", out}), 1, {"absent.csv"});
    const std::string no_target = write_text(dir, "no_target.csv", "width,height,colour\n1,2,red\n");
    require_failure(dir, quick({"--data", good, "--test", no_target, "--out", out}), 1, {"no_target.csv", "kind"});
    // Usage errors (status 2), before any file is read.
    require_failure(dir, quick({"--data", good, "--delimiter", ";;", "--out", out}), 2, {"--delimiter"});
    require_failure(dir, quick({"--data", good, "--val-fraction", "1", "--out", out}), 2, {"--val-fraction"});
    require_failure(dir, quick({"--data", good, "--model", "cnn", "--out", out}), 2, {"--model cnn", "good.csv"});
    require_failure(dir, quick({"--dataset", "mnist", "--target", "kind", "--out", out}), 2, {"--target", "table"});
    // eval and predict of a table model refuse what does not fit it.
    const std::string run = dir / "ok";
    REQUIRE(run_normnet(quick({"--data", good, "--epochs", "1", "--out", run}), dir.work()).status == 0);
    require_failure(dir, {"eval", "--checkpoint", run, "--data", no_target}, 1, {"no_target.csv", "kind", "predict"});
    const std::string other = write_text(dir, "other.csv", "p,q\n1,2\n");
    require_failure(dir, {"predict", "--checkpoint", run, "--input", other}, 1, {"other.csv", "width"});
}

TEST_CASE("table cli: 1 epoch + --resume for 1 equals 2 epochs straight, bit for bit", "[cli][table][resume]") {
    TempDir dir;
    const std::string data = write_text(dir, "t.csv", class_table(300, 5));
    const std::vector<std::string> common{"--data", data, "--schedule", "constant", "--batch-size", "32"};
    const std::string a = dir / "A", b = dir / "B";
    REQUIRE(run_normnet(quick(with(common, {"--epochs", "2", "--out", a})), dir.work()).status == 0);
    REQUIRE(run_normnet(quick(with(common, {"--epochs", "1", "--out", b})), dir.work()).status == 0);
    const RunResult resumed = run_normnet(quick({"--data", data, "--resume", b, "--epochs", "2"}), dir.work());
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    require_same_tensors(a + "/model.safetensors", b + "/model.safetensors");
    require_same_tensors(a + "/training_state.safetensors", b + "/training_state.safetensors");
    // Another file under the same name is not the run's table.
    write_text(dir, "t.csv", class_table(300, 6));
    require_failure(dir, quick({"--data", data, "--resume", b, "--epochs", "3"}), 1, {"--resume", "t.csv"});
}

TEST_CASE("table cli: compare asks the seed's question of a table, bench times it against its GEMM floor",
          "[cli][table][compare][bench]") {
    TempDir dir;
    const std::string data = write_text(dir, "shapes.csv", class_table(400, 7));
    const RunResult r = run_normnet({"compare", "--data", data, "--norms", "layer,batch", "--batch-sizes", "16,64", "--epochs",
                                     "6", "--hidden", "32", "--threads", "1", "--out", dir / "cmp"},
                                    dir.work());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    const auto results = lines_of(read_file(dir / "cmp/results.csv"));
    REQUIRE(results.size() == 5);  // header + 2 norms x 2 batch sizes
    for (size_t i = 1; i < results.size(); ++i) {
        const auto cells = csv_cells(results[i]);
        CHECK(std::stod(cells[5]) >= 0.5);                    // final test accuracy (chance: 1/3)
        CHECK(cells[15] == "true");                            // batch-of-one eval equals full-batch eval
        CHECK(cells[16].empty() == (cells[0] != "batch"));    // BatchNorm's three evaluations
    }
    const std::string report = read_file(dir / "cmp/report.md");
    CHECK_THAT(report, Contains("Model 5-32-3 MLP") && Contains("data shapes.csv") && Contains("The first 320 training rows"));

    const RunResult b = run_normnet({"bench", "--data", data, "--batch-sizes", "32", "--norms", "layer", "--epochs", "1",
                                     "--warmup-epochs", "0", "--hidden", "16", "--threads", "1", "--json"},
                                    dir.work());
    INFO(b.err);
    REQUIRE(b.status == 0);
    const auto row = nlohmann::json::parse(lines_of(b.out).at(0));
    CHECK(row.at("batch") == 32);
    CHECK(row.at("ratio_to_floor").get<double>() > 0);
}

TEST_CASE("table cli: compare on a regression scores R^2, names its columns r2, and checks batch-of-one predictions",
          "[cli][table][compare]") {
    TempDir dir;
    const std::string data = write_text(dir, "reg.csv", regression_table(400, 8));
    const RunResult r = run_normnet({"compare", "--data", data, "--norms", "layer,batch,none", "--batch-sizes", "8,32",
                                     "--epochs", "10", "--hidden", "32", "--threads", "1", "--out", dir / "cmp"},
                                    dir.work());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("Final test R² (%)") && Contains("Test 1 − R² (%) against batch size"));
    const auto results = lines_of(read_file(dir / "cmp/results.csv"));
    REQUIRE(results.size() == 7);  // header + 3 norms x 2 batch sizes
    CHECK_THAT(results[0], Contains("final_test_r2,best_test_r2") && Contains("train_eval_output_mad") &&
                               !Contains("_acc"));
    for (size_t i = 1; i < results.size(); ++i) {
        const auto cells = csv_cells(results[i]);
        CHECK(std::stod(cells[5]) >= 0.5);  // learnt: predicting the mean scores 0 (no norm at batch 32 ends near 0.77)
        CHECK(cells[14] == "0");                           // no prediction changes from batch 1000 to batch 1
        CHECK(cells[15] == "true");
        CHECK(cells[16].empty() == (cells[0] != "batch"));  // BatchNorm's three evaluations
        if (cells[0] != "batch") CHECK(std::stod(cells[11]) == 0);  // no train/eval difference without batch statistics
    }
    CHECK_THAT(lines_of(read_file(dir / "cmp/curves.csv")).at(0), Contains("test_loss,test_rmse,test_r2"));
    CHECK_THAT(read_file(dir / "cmp/report.md"), Contains("The target y is a regression") && Contains("Final test R²"));
    // Its runs are single-process: --world is one line, nothing written.
    require_failure(dir, {"compare", "--data", data, "--world", "1,2", "--out", dir / "cmp2"}, 1, {"--world", "regression"});
    CHECK_FALSE(std::filesystem::exists(dir / "cmp2"));
}

TEST_CASE("table cli: scikit-learn's real tables, the default recipe against scikit-learn's baseline", "[cli][table][sklearn]") {
#ifndef NORMNET_PYTHON3
    NORMNET_SKIP("no /usr/bin/python3 at configure time (scikit-learn's tables are written by it)");
#else
    TempDir dir;
    const std::string script = std::string(NORMNET_TEST_DIR) + "/tables/sklearn_tables.py";
    const std::string command = std::string(NORMNET_PYTHON3) + " " + shell_quote(script) + " --out " + shell_quote(dir / "t") +
                                " 2>&1";
    std::string baseline_text;
    {
        std::FILE* pipe = ::popen(command.c_str(), "r");
        REQUIRE(pipe != nullptr);
        char buffer[4096];
        for (size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) baseline_text.append(buffer, got);
        if (::pclose(pipe) != 0) NORMNET_SKIP("scikit-learn's tables could not be written (python3-sklearn?): " << baseline_text);
    }
    const auto baseline = nlohmann::json::parse(baseline_text);
    for (const char* name : {"wine", "breast_cancer", "digits", "iris"}) {
        const std::string run = dir / name;
        const RunResult r = run_normnet(quick({"--data", dir / "t" + "/" + name + "_train.csv", "--test",
                                               dir / "t" + "/" + name + "_test.csv", "--out", run}),
                                        dir.work());
        INFO(name << ": " << r.err);
        REQUIRE(r.status == 0);
        const auto m = nlohmann::json::parse(run_normnet({"eval", "--checkpoint", run, "--json"}, dir.work()).out);
        const double ours = m.at("accuracy").get<double>(), theirs = baseline.at(name).at("accuracy").get<double>();
        WARN(name << ": normnet " << 100 * ours << "%, scikit-learn's logistic regression " << 100 * theirs << "%");
        CHECK(ours >= theirs - 0.025);
    }
    // Diabetes (442 rows, 10 features): the seed's LayerNorm MLP overfits it; without a
    // normalisation, a 64-unit layer and smaller steps come to Ridge's R^2.
    const std::string run = dir / "diabetes";
    const std::vector<std::string> data{"--data", dir / "t/diabetes_train.csv", "--test", dir / "t/diabetes_test.csv", "--out", run,
                                        "--overwrite"};
    double r2[2];
    for (int v = 0; v < 2; ++v) {
        const auto options = v == 0 ? data : with(data, {"--norm", "none", "--hidden", "64", "--batch-size", "32", "--lr", "0.0005"});
        REQUIRE(run_normnet(quick(options), dir.work()).status == 0);
        r2[v] = nlohmann::json::parse(run_normnet({"eval", "--checkpoint", run, "--json"}, dir.work()).out).at("r2").get<double>();
    }
    const double ridge = baseline.at("diabetes").at("r2").get<double>();
    WARN("diabetes: R^2 default recipe " << r2[0] << ", --norm none --hidden 64 " << r2[1] << ", scikit-learn's Ridge " << ridge);
    CHECK(r2[0] > 0.1);
    CHECK(r2[1] >= ridge - 0.03);
#endif
}
