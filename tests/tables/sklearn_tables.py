#!/usr/bin/env python3
"""Writes scikit-learn's bundled real tables (the CSV files under sklearn/datasets/data, read by its
loaders) as ordinary CSV files with a header, the target a named column (class names as text for
classification), split 75/25 by train_test_split(random_state=0), stratified for classes:

    DIR/<name>_train.csv, DIR/<name>_test.csv    for wine, breast_cancer, digits, iris, diabetes

and prints, as one JSON object, scikit-learn's own baseline on the same split: standardised
logistic regression's test accuracy for the classification tables, Ridge's test R^2 for diabetes.
The table tests train normnet on these files and compare."""
import argparse
import csv
import json
import os
import warnings

from sklearn import datasets
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

TABLES = {  # name -> (loader, target column, class names or None for regression)
    "wine": (datasets.load_wine, "cultivar", None),
    "breast_cancer": (datasets.load_breast_cancer, "diagnosis", None),
    "digits": (datasets.load_digits, "digit", [f"d{i}" for i in range(10)]),
    "iris": (datasets.load_iris, "species", None),
    "diabetes": (datasets.load_diabetes, "progression", None),
}


def write(path, header, rows):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(header)
        out.writerows(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    warnings.filterwarnings("ignore")
    baselines = {}
    for name, (load, target, names) in TABLES.items():
        bunch = load()
        X, y = bunch.data, bunch.target
        regression = name == "diabetes"
        if not regression and names is None:
            names = [str(n) for n in bunch.target_names]
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0,
                                              stratify=None if regression else y)
        header = [str(f) for f in bunch.feature_names] + [target]
        for split, (Xs, ys) in {"train": (Xtr, ytr), "test": (Xte, yte)}.items():
            rows = [[repr(float(v)) for v in x] + [repr(float(t)) if regression else names[int(t)]]
                    for x, t in zip(Xs, ys)]
            write(os.path.join(a.out, f"{name}_{split}.csv"), header, rows)
        if regression:
            baselines[name] = {"r2": Ridge().fit(Xtr, ytr).score(Xte, yte)}
        else:
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(Xtr, ytr)
            baselines[name] = {"accuracy": model.score(Xte, yte)}
    print(json.dumps(baselines))


if __name__ == "__main__":
    main()
