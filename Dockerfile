# Image for web, worker and beat (docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends npm && rm -rf /var/lib/apt/lists/*
COPY requirements.txt package.json ./
# torch first, CPU build, exact version: anything else pulls the CUDA wheels.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir -r requirements.txt \
    && npm install --no-audit --no-fund
COPY . .
RUN SECRET_KEY=build DEBUG=0 DATABASE_URL=postgres://build@localhost/build python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "ratiba.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "60"]
